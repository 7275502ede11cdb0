/*
 * metrics.h - airlockd's Prometheus metrics (text exposition format 0.0.4), one process-wide
 * registry. Counters and the run duration histogram are updated from any thread (the HTTP
 * thread counts requests, the runs engine's threads count runs and host calls); gauges are not
 * stored here but read at scrape time from a callback registered by whoever owns the number.
 *
 * Label values come from outside (template, connector and route names, statuses): each family
 * keeps at most METRICS_SERIES_MAX label sets, later new ones are counted under the label value
 * "_other", so a caller inventing names cannot grow the registry or the scrape without bound.
 * Label values longer than METRICS_LABEL_MAX bytes are cut (at a UTF-8 character boundary).
 *
 * Families:
 *   airlock_http_requests_total{route,code}      counter: route = the matched pattern or
 *                                                "unmatched", code = the HTTP status
 *   airlock_runs_total{template,status}           counter: runs that ended, by their status
 *   airlock_run_duration_seconds                  histogram: 1 ms .. 60 s, +Inf
 *   airlock_host_calls_total{connector,outcome}   counter
 *   airlock_approvals_pending, airlock_workers_warm, airlock_runs_active, airlock_audit_records
 *                                                gauges: 0 until their owner registers a callback
 */
#ifndef AIRLOCK_SERVER_METRICS_H
#define AIRLOCK_SERVER_METRICS_H

#include "buf.h"

#define METRICS_SERIES_MAX 500 /* label sets per family before "_other" */
#define METRICS_LABEL_MAX  128 /* bytes of one label value */
#define METRICS_GAUGES_MAX 32
#define METRICS_NAME_MAX   64 /* bytes of a gauge's name */

/* A gauge's current value, read at scrape time on the scraping thread (the HTTP thread) without
 * the registry's lock held. NaN when the value cannot be read (rendered as NaN). */
typedef double metrics_read_fn(void *userdata);

/* One request answered: route is the matched route pattern, NULL or "" for none ("unmatched").
 * Thread-safe. */
void metrics_http_request(const char *route, unsigned status);
/* One run ended with `status` (completed, failed, cancelled, denied) after duration_s seconds
 * of wall time (negative counts as 0). template_name NULL or "" counts as "adhoc".
 * Thread-safe. */
void metrics_run(const char *template_name, const char *status, double duration_s);
/* One host call reached its end at `connector` ("crm") with `outcome` (e.g. "ok", "error",
 * "timeout", "denied"). Thread-safe. */
void metrics_host_call(const char *connector, const char *outcome);

/* Registers (or, for a name registered before, replaces) the gauge `name` with its HELP text;
 * fn(userdata) gives its value at every scrape; fn NULL renders 0. name must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* and be at most METRICS_NAME_MAX bytes; help is copied (up to 255
 * bytes). 0 on success, -1 for a bad name or a full table (METRICS_GAUGES_MAX). Thread-safe;
 * userdata must outlive the registration. */
int metrics_gauge_fn(const char *name, const char *help, metrics_read_fn *fn, void *userdata);

/* Appends the whole exposition (every family, HELP and TYPE lines, series in order of first
 * use) to out. Thread-safe; calls the gauge callbacks on the caller's thread. 0, or -1 when out
 * filled up (its content is then torn and must not be sent). */
int metrics_render(struct buf *out);

/* Forgets every series and gauge registration (the known gauges come back at 0): for tests. */
void metrics_reset(void);

#endif
