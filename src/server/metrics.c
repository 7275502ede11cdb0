/*
 * metrics.c - the registry behind metrics.h. One mutex guards every counter: an update is a
 * short linear search over at most METRICS_SERIES_MAX label sets and an increment, cheap next
 * to the request or run it counts. Label values are normalised once, when counted (cut to
 * METRICS_LABEL_MAX at a character boundary, invalid UTF-8 replaced by '?'), and escaped when
 * rendered, so the stored value is what the series is keyed on. Gauge callbacks run outside the
 * lock: they may take their owner's locks (or the store) without ordering against this one.
 * The storage is static (a few hundred KiB of zero pages): nothing to allocate or free.
 */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define METRICS_HELP_MAX 255
#define OTHER            "_other"

struct metrics_series {
    char a[METRICS_LABEL_MAX + 1];
    char b[METRICS_LABEL_MAX + 1];
    uint64_t count;
};

struct metrics_family {
    const char *name;
    const char *help;
    const char *label_a;
    const char *label_b;
    size_t n;                                             /* series used, "_other" included */
    struct metrics_series series[METRICS_SERIES_MAX + 1]; /* + the "_other" series */
};

struct metrics_gauge {
    char name[METRICS_NAME_MAX + 1];
    char help[METRICS_HELP_MAX + 1];
    metrics_read_fn *fn;
    void *userdata;
};

/* seconds, each printed as written here by %g; the +Inf bucket is the count */
static const double bucket_le[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                    0.5,   1,      2.5,   5,    10,    30,   60 };
#define NBUCKETS (sizeof bucket_le / sizeof bucket_le[0])

/* The gauges every scrape shows, 0 until their owners register. */
static const char *const gauge_defaults[][2] = {
    { "airlock_approvals_pending", "Approvals waiting for a decision." },
    { "airlock_workers_warm", "Worker processes started and idle, ready for a run." },
    { "airlock_runs_active", "Runs executing or waiting (queued, running, awaiting approval)." },
    { "airlock_audit_records", "Records in the audit log (the seq of the last one)." },
};
#define NDEFAULTS (sizeof gauge_defaults / sizeof gauge_defaults[0])

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_family http_requests = {
    .name = "airlock_http_requests_total",
    .help = "HTTP requests answered, by route pattern and status.",
    .label_a = "route",
    .label_b = "code",
};
static struct metrics_family runs = {
    .name = "airlock_runs_total",
    .help = "Runs ended, by template and status.",
    .label_a = "template",
    .label_b = "status",
};
static struct metrics_family host_calls = {
    .name = "airlock_host_calls_total",
    .help = "Host (connector) calls, by connector and outcome.",
    .label_a = "connector",
    .label_b = "outcome",
};
static struct {
    uint64_t bucket[NBUCKETS];
    uint64_t count;
    double sum;
} duration;
static struct metrics_gauge gauges[METRICS_GAUGES_MAX];
static size_t ngauges;
static int gauges_ready;

/* Length of the well-formed UTF-8 character at s (n bytes left), 0 when it is not one. */
static size_t metrics_utf8_char(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (s[0] < 0x80) {
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        lo = s[0] == 0xe0 ? 0xa0 : 0x80; /* overlong */
        hi = s[0] == 0xed ? 0x9f : 0xbf; /* surrogates */
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        lo = s[0] == 0xf0 ? 0x90 : 0x80;
        hi = s[0] == 0xf4 ? 0x8f : 0xbf; /* past U+10FFFF */
    } else {
        return 0;
    }
    if (len > n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) {
            return 0;
        }
    }
    return len;
}

/* Copies s into out (METRICS_LABEL_MAX + 1 bytes): whole characters only, '?' for a byte that
 * starts no valid character, fallback for NULL or "". */
static void metrics_label(const char *s, const char *fallback, char *out)
{
    size_t o = 0;
    if (!s || !s[0]) {
        s = fallback;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = metrics_utf8_char(u + i, n - i);
        size_t take = len ? len : 1;
        if (o + take > METRICS_LABEL_MAX) {
            break;
        }
        if (len) {
            memcpy(out + o, s + i, len);
        } else {
            out[o] = '?';
        }
        o += take;
        i += take;
    }
    out[o] = '\0';
}

/* Adds 1 to the series (a, b) of f, or to its "_other" series once f is full. Lock held. */
static void metrics_count(struct metrics_family *f, const char *a, const char *b)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->series[i].a, a) == 0 && strcmp(f->series[i].b, b) == 0) {
            f->series[i].count++;
            return;
        }
    }
    struct metrics_series *s = &f->series[f->n < METRICS_SERIES_MAX ? f->n : METRICS_SERIES_MAX];
    if (f->n <= METRICS_SERIES_MAX) {
        /* a new series, or the first past the limit: "_other" */
        int other = f->n == METRICS_SERIES_MAX;
        snprintf(s->a, sizeof s->a, "%s", other ? OTHER : a);
        snprintf(s->b, sizeof s->b, "%s", other ? OTHER : b);
        s->count = 0; /* a slot used before metrics_reset */
        f->n++;
    }
    s->count++;
}

/* Counts (a, b) in f, their labels normalised; and a run's duration when duration_s is not
 * NULL, under the same lock so a scrape sees both or neither. */
static void metrics_count2(struct metrics_family *f, const char *a, const char *fallback_a,
                           const char *b, const double *duration_s)
{
    char la[METRICS_LABEL_MAX + 1];
    char lb[METRICS_LABEL_MAX + 1];
    metrics_label(a, fallback_a, la);
    metrics_label(b, "unknown", lb);
    pthread_mutex_lock(&lock);
    metrics_count(f, la, lb);
    if (duration_s) {
        for (size_t i = 0; i < NBUCKETS; i++) {
            duration.bucket[i] += *duration_s <= bucket_le[i];
        }
        duration.count++;
        duration.sum += isfinite(*duration_s) ? *duration_s : 0;
    }
    pthread_mutex_unlock(&lock);
}

void metrics_http_request(const char *route, unsigned status)
{
    char code[16];
    snprintf(code, sizeof code, "%u", status);
    metrics_count2(&http_requests, route, "unmatched", code, NULL);
}

void metrics_run(const char *template_name, const char *status, double duration_s)
{
    if (!(duration_s > 0)) { /* negative and NaN alike */
        duration_s = 0;
    }
    metrics_count2(&runs, template_name, "adhoc", status, &duration_s);
}

void metrics_host_call(const char *connector, const char *outcome)
{
    metrics_count2(&host_calls, connector, "unknown", outcome, NULL);
}

static int metrics_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > METRICS_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                 (i > 0 && c >= '0' && c <= '9');
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* Adds the default gauges on first use. Lock held. */
static void metrics_gauges_ready(void)
{
    if (gauges_ready) {
        return;
    }
    for (size_t i = 0; i < NDEFAULTS; i++) {
        snprintf(gauges[i].name, sizeof gauges[i].name, "%s", gauge_defaults[i][0]);
        snprintf(gauges[i].help, sizeof gauges[i].help, "%s", gauge_defaults[i][1]);
        gauges[i].fn = NULL;
        gauges[i].userdata = NULL;
    }
    ngauges = NDEFAULTS;
    gauges_ready = 1;
}

int metrics_gauge_fn(const char *name, const char *help, metrics_read_fn *fn, void *userdata)
{
    int rc = -1;
    if (!name || !metrics_name_ok(name)) {
        return -1;
    }
    pthread_mutex_lock(&lock);
    metrics_gauges_ready();
    size_t i;
    for (i = 0; i < ngauges && strcmp(gauges[i].name, name) != 0; i++) {
    }
    if (i == ngauges) {
        if (ngauges == METRICS_GAUGES_MAX) {
            goto out;
        }
        ngauges++;
        snprintf(gauges[i].name, sizeof gauges[i].name, "%s", name);
    }
    snprintf(gauges[i].help, sizeof gauges[i].help, "%s", help ? help : "");
    gauges[i].fn = fn;
    gauges[i].userdata = userdata;
    rc = 0;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The exposition being written: the first failed append marks it bad (later, shorter appends
 * could still fit, so the text would be torn: the caller must not send it). */
struct metrics_out {
    struct buf *b;
    int bad;
};

static void out_mem(struct metrics_out *o, const char *s, size_t len)
{
    if (!o->bad && buf_append(o->b, s, len) != BUF_OK) {
        o->bad = 1;
    }
}

static void out_str(struct metrics_out *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

static void out_printf(struct metrics_out *o, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void out_printf(struct metrics_out *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        o->bad = 1;
        return;
    }
    out_mem(o, line, (size_t)n);
}

/* Appends s escaped: always \ and newline, and " inside a label value. */
static void out_escaped(struct metrics_out *o, const char *s, int quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\') {
            rep = "\\\\";
        } else if (*s == '\n') {
            rep = "\\n";
        } else if (*s == '"' && quote) {
            rep = "\\\"";
        }
        if (rep) {
            out_mem(o, run, (size_t)(s - run));
            out_str(o, rep);
            run = s + 1;
        }
    }
    out_mem(o, run, (size_t)(s - run));
}

static void out_header(struct metrics_out *o, const char *name, const char *help, const char *type)
{
    out_printf(o, "# HELP %s ", name);
    out_escaped(o, help, 0);
    out_printf(o, "\n# TYPE %s %s\n", name, type);
}

static void out_value(struct metrics_out *o, double v)
{
    if (isnan(v)) {
        out_str(o, "NaN\n");
    } else if (isinf(v)) {
        out_str(o, v > 0 ? "+Inf\n" : "-Inf\n");
    } else {
        out_printf(o, "%.17g\n", v);
    }
}

static void out_family(struct metrics_out *o, const struct metrics_family *f)
{
    out_header(o, f->name, f->help, "counter");
    for (size_t i = 0; i < f->n; i++) {
        const struct metrics_series *s = &f->series[i];
        out_printf(o, "%s{%s=\"", f->name, f->label_a);
        out_escaped(o, s->a, 1);
        out_printf(o, "\",%s=\"", f->label_b);
        out_escaped(o, s->b, 1);
        out_printf(o, "\"} %llu\n", (unsigned long long)s->count);
    }
}

int metrics_render(struct buf *out)
{
    static const char dname[] = "airlock_run_duration_seconds";
    struct metrics_out o = { out, 0 };
    struct metrics_gauge copy[METRICS_GAUGES_MAX];
    size_t ncopy;

    pthread_mutex_lock(&lock);
    out_family(&o, &http_requests);
    out_family(&o, &runs);
    out_header(&o, dname, "Wall time of runs that ended, in seconds.", "histogram");
    for (size_t i = 0; i < NBUCKETS; i++) {
        out_printf(&o, "%s_bucket{le=\"%g\"} %llu\n", dname, bucket_le[i],
                   (unsigned long long)duration.bucket[i]);
    }
    out_printf(&o, "%s_bucket{le=\"+Inf\"} %llu\n", dname, (unsigned long long)duration.count);
    out_printf(&o, "%s_sum ", dname);
    out_value(&o, duration.sum);
    out_printf(&o, "%s_count %llu\n", dname, (unsigned long long)duration.count);
    out_family(&o, &host_calls);
    metrics_gauges_ready();
    ncopy = ngauges;
    memcpy(copy, gauges, ncopy * sizeof copy[0]);
    pthread_mutex_unlock(&lock);

    for (size_t i = 0; i < ncopy; i++) {
        out_header(&o, copy[i].name, copy[i].help, "gauge");
        out_printf(&o, "%s ", copy[i].name);
        out_value(&o, copy[i].fn ? copy[i].fn(copy[i].userdata) : 0);
    }
    return o.bad ? -1 : 0;
}

void metrics_reset(void)
{
    pthread_mutex_lock(&lock);
    http_requests.n = 0;
    runs.n = 0;
    host_calls.n = 0;
    memset(&duration, 0, sizeof duration);
    ngauges = 0;
    gauges_ready = 0;
    pthread_mutex_unlock(&lock);
}
