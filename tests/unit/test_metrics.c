/* unit.metrics - airlockd's Prometheus registry (src/server/metrics.c) through its rendered
 * text: counters by label set, the run duration histogram (cumulative buckets, _sum, _count),
 * label values escaped per the text format and made valid UTF-8, the per-family cap on label
 * sets ("_other"), gauges read through callbacks, a full buffer reported, and counts from
 * several threads at once all kept. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static int setup(void **state)
{
    (void)state;
    metrics_reset();
    return 0;
}

/* The rendered exposition; free() it. */
static char *render(void)
{
    struct buf b;
    buf_init(&b, (size_t)16 << 20);
    assert_int_equal(metrics_render(&b), 0);
    size_t len = 0;
    char *text = buf_steal(&b, &len);
    assert_non_null(text);
    return text;
}

/* The value on the line that starts with `series` followed by a space; -1 when there is none. */
static double value_of(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ') {
            return strtod(line + n + 1, NULL);
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return -1;
}

static size_t count_prefix(const char *text, const char *prefix)
{
    size_t n = 0;
    size_t len = strlen(prefix);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, prefix, len) == 0) {
            n++;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return n;
}

static void test_metrics_counters_by_label_set(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        metrics_http_request("/v1/me", 200);
    }
    metrics_http_request("/v1/me", 401);
    metrics_http_request(NULL, 404);
    metrics_http_request("", 405);
    metrics_host_call("crm", "ok");
    metrics_host_call("crm", "ok");
    metrics_host_call("crm", "timeout");
    char *t = render();
    assert_true(value_of(t, "airlock_http_requests_total{route=\"/v1/me\",code=\"200\"}") == 3);
    assert_true(value_of(t, "airlock_http_requests_total{route=\"/v1/me\",code=\"401\"}") == 1);
    assert_true(value_of(t, "airlock_http_requests_total{route=\"unmatched\",code=\"404\"}") == 1);
    assert_true(value_of(t, "airlock_http_requests_total{route=\"unmatched\",code=\"405\"}") == 1);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"crm\",outcome=\"ok\"}") == 2);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"crm\",outcome=\"timeout\"}") ==
                1);
    assert_non_null(strstr(t, "# TYPE airlock_http_requests_total counter\n"));
    assert_non_null(strstr(t, "# TYPE airlock_host_calls_total counter\n"));
    assert_non_null(strstr(t, "# TYPE airlock_runs_total counter\n"));
    assert_int_equal(t[strlen(t) - 1], '\n');
    free(t);
}

static void test_metrics_histogram_cumulative(void **state)
{
    (void)state;
    metrics_run("refund", "completed", 0.0005); /* <= 1 ms */
    metrics_run("refund", "completed", 0.001);  /* on a bound: counts in that bucket */
    metrics_run("refund", "failed", 0.003);
    metrics_run("orders", "completed", 0.2);
    metrics_run("orders", "cancelled", 100); /* past the last bound: +Inf only */
    metrics_run(NULL, "completed", -1);      /* ad-hoc; negative counts as 0 */
    char *t = render();
    const char *h = "airlock_run_duration_seconds";
    char series[128];
    struct {
        const char *le;
        double want;
    } want[] = { { "0.001", 3 }, { "0.0025", 3 }, { "0.005", 4 }, { "0.01", 4 }, { "0.1", 4 },
                 { "0.25", 5 },  { "1", 5 },      { "60", 5 },    { "+Inf", 6 } };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(series, sizeof series, "%s_bucket{le=\"%s\"}", h, want[i].le);
        assert_true(value_of(t, series) == want[i].want);
    }
    snprintf(series, sizeof series, "%s_bucket{le=", h);
    assert_int_equal(count_prefix(t, series), 16); /* 15 bounds from 1 ms to 60 s, and +Inf */
    snprintf(series, sizeof series, "%s_count", h);
    assert_true(value_of(t, series) == 6);
    snprintf(series, sizeof series, "%s_sum", h);
    assert_true(fabs(value_of(t, series) - (0.0005 + 0.001 + 0.003 + 0.2 + 100)) < 1e-9);
    assert_non_null(strstr(t, "# TYPE airlock_run_duration_seconds histogram\n"));
    assert_true(value_of(t, "airlock_runs_total{template=\"refund\",status=\"completed\"}") == 2);
    assert_true(value_of(t, "airlock_runs_total{template=\"orders\",status=\"cancelled\"}") == 1);
    assert_true(value_of(t, "airlock_runs_total{template=\"adhoc\",status=\"completed\"}") == 1);
    free(t);
}

static void test_metrics_label_values_escaped(void **state)
{
    (void)state;
    metrics_run("a\"b\\c\nd", "completed", 0.01);
    metrics_host_call("bad\xff\xc3x-utf8", "ok");
    char *t = render();
    assert_true(
            value_of(t, "airlock_runs_total{template=\"a\\\"b\\\\c\\nd\",status=\"completed\"}") ==
            1);
    assert_true(
            value_of(t, "airlock_host_calls_total{connector=\"bad?\?x-utf8\",outcome=\"ok\"}") ==
            1);
    /* no raw newline inside a series: every line is a comment or starts with a metric name */
    for (const char *line = t; *line;) {
        assert_true(line[0] == '#' || strncmp(line, "airlock_", 8) == 0);
        line = strchr(line, '\n') + 1;
    }
    free(t);
}

static void test_metrics_long_label_cut_on_character(void **state)
{
    (void)state;
    char name[METRICS_LABEL_MAX * 2];
    /* "é" (2 bytes) repeated, after one ASCII byte, so the cap falls inside a character */
    name[0] = 'x';
    size_t n = 1;
    while (n + 2 < sizeof name) {
        name[n++] = '\xc3';
        name[n++] = '\xa9';
    }
    name[n] = '\0';
    metrics_host_call(name, "ok");
    char *t = render();
    const char *start = strstr(t, "airlock_host_calls_total{connector=\"");
    assert_non_null(start);
    start += strlen("airlock_host_calls_total{connector=\"");
    const char *end = strchr(start, '"');
    size_t len = (size_t)(end - start);
    assert_true(len <= METRICS_LABEL_MAX);
    assert_int_equal(len % 2, 1); /* 'x' and whole characters only */
    assert_int_equal(len, METRICS_LABEL_MAX - 1);
    free(t);
}

static void test_metrics_cardinality_capped(void **state)
{
    (void)state;
    char name[32];
    for (int i = 0; i < METRICS_SERIES_MAX + 100; i++) {
        snprintf(name, sizeof name, "conn-%d", i);
        metrics_host_call(name, "ok");
    }
    metrics_host_call("conn-0", "ok"); /* a label set seen before the cap still counts as itself */
    metrics_host_call("late", "error");
    char *t = render();
    assert_int_equal(count_prefix(t, "airlock_host_calls_total{"), METRICS_SERIES_MAX + 1);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"conn-0\",outcome=\"ok\"}") == 2);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"conn-499\",outcome=\"ok\"}") ==
                1);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"conn-500\",outcome=\"ok\"}") ==
                -1);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"_other\",outcome=\"_other\"}") ==
                101);
    /* the other families have their own cap */
    metrics_http_request("/v1/me", 200);
    free(t);
    t = render();
    assert_true(value_of(t, "airlock_http_requests_total{route=\"/v1/me\",code=\"200\"}") == 1);
    free(t);
}

static double read_double(void *userdata)
{
    return *(const double *)userdata;
}

static void test_metrics_gauges_from_callbacks(void **state)
{
    (void)state;
    double pending = 7;
    double nan_value = NAN;
    char *t = render();
    /* the known gauges show 0 until their owner registers */
    assert_true(value_of(t, "airlock_approvals_pending") == 0);
    assert_true(value_of(t, "airlock_workers_warm") == 0);
    assert_true(value_of(t, "airlock_runs_active") == 0);
    assert_true(value_of(t, "airlock_audit_records") == 0);
    assert_non_null(strstr(t, "# TYPE airlock_runs_active gauge\n"));
    free(t);
    assert_int_equal(
            metrics_gauge_fn("airlock_approvals_pending", "Pending.", read_double, &pending), 0);
    assert_int_equal(metrics_gauge_fn("airlock_custom", "A\\b\nc", read_double, &nan_value), 0);
    pending = 9; /* read at scrape time, not at registration */
    t = render();
    assert_true(value_of(t, "airlock_approvals_pending") == 9);
    assert_non_null(strstr(t, "# HELP airlock_approvals_pending Pending.\n"));
    assert_non_null(strstr(t, "airlock_custom NaN\n"));
    assert_non_null(strstr(t, "# HELP airlock_custom A\\\\b\\nc\n")); /* HELP escapes \ and \n */
    assert_int_equal(count_prefix(t, "# TYPE airlock_approvals_pending "), 1);
    free(t);
    /* a bad name is refused */
    assert_int_equal(metrics_gauge_fn("9lives", "", read_double, &pending), -1);
    assert_int_equal(metrics_gauge_fn("a b", "", read_double, &pending), -1);
    assert_int_equal(metrics_gauge_fn("", "", read_double, &pending), -1);
    /* the table is bounded */
    char name[32];
    int added = 0;
    for (int i = 0; i < METRICS_GAUGES_MAX + 5; i++) {
        snprintf(name, sizeof name, "g_%d", i);
        added += metrics_gauge_fn(name, "", NULL, NULL) == 0;
    }
    assert_int_equal(added, METRICS_GAUGES_MAX - 5); /* 4 known gauges and airlock_custom */
}

static void test_metrics_full_buffer_reported(void **state)
{
    (void)state;
    struct buf b;
    metrics_http_request("/v1/me", 200);
    buf_init(&b, 100);
    assert_int_equal(metrics_render(&b), -1);
    buf_done(&b);
}

#define THREADS 4
#define PER     5000

static void *count_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER; i++) {
        metrics_http_request("/v1/runs", 200);
        metrics_run("t", "completed", 0.002);
        metrics_host_call("crm", "ok");
    }
    return NULL;
}

static void test_metrics_threads_lose_nothing(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, count_many, NULL), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    char *t = render();
    double want = THREADS * PER;
    assert_true(value_of(t, "airlock_http_requests_total{route=\"/v1/runs\",code=\"200\"}") ==
                want);
    assert_true(value_of(t, "airlock_runs_total{template=\"t\",status=\"completed\"}") == want);
    assert_true(value_of(t, "airlock_run_duration_seconds_count") == want);
    assert_true(value_of(t, "airlock_run_duration_seconds_bucket{le=\"0.0025\"}") == want);
    assert_true(value_of(t, "airlock_host_calls_total{connector=\"crm\",outcome=\"ok\"}") == want);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_metrics_counters_by_label_set, setup),
        cmocka_unit_test_setup(test_metrics_histogram_cumulative, setup),
        cmocka_unit_test_setup(test_metrics_label_values_escaped, setup),
        cmocka_unit_test_setup(test_metrics_long_label_cut_on_character, setup),
        cmocka_unit_test_setup(test_metrics_cardinality_capped, setup),
        cmocka_unit_test_setup(test_metrics_gauges_from_callbacks, setup),
        cmocka_unit_test_setup(test_metrics_full_buffer_reported, setup),
        cmocka_unit_test_setup(test_metrics_threads_lose_nothing, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
