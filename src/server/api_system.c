/*
 * api_system.c - the unauthenticated endpoints: /healthz answers while the process serves HTTP,
 * /readyz only while the store answers a query too (a load balancer takes the node out
 * otherwise), /v1/openapi.json the embedded API document, /metrics the Prometheus exposition.
 * None of them shows anything a key would protect: the document is public, and the metrics
 * are counts by route, template, connector and status, never inputs, principals or keys.
 */
#include <math.h>

#include "api.h"
#include "auditlog.h"
#include "metrics.h"
#include "openapi.h"

void api_system_healthz(struct api_ctx *ctx)
{
    api_reply(ctx, 200);
    buf_append_str(&ctx->resp->body, "{\"status\":\"ok\"}\n");
}

void api_system_readyz(struct api_ctx *ctx)
{
    if (ctx->store->ops->ping(ctx->store) != STORE_OK) {
        api_reply(ctx, 503);
        api_member(&ctx->resp->body,
                   "{\"status\":\"unavailable\",\"reason\":", ctx->store->ops->errmsg(ctx->store));
        buf_append_str(&ctx->resp->body, "}\n");
        return;
    }
    /* a cut audit log is said, but the node stays ready: the log is to be read and exported */
    struct auditlog_result kept;
    if (auditlog_kept_check(ctx->svc ? ctx->svc->kept : NULL, ctx->store, &kept) == STORE_OK &&
        !kept.ok) {
        api_reply(ctx, 200);
        buf_append_str(&ctx->resp->body, "{\"status\":\"ready\",\"audit\":\"truncated\"}\n");
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(&ctx->resp->body, "{\"status\":\"ready\"}\n");
}

void api_system_openapi(struct api_ctx *ctx)
{
    api_reply(ctx, 200);
    if (buf_append(&ctx->resp->body, openapi_json, openapi_json_len) != BUF_OK) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return;
    }
    ctx->resp->etag = openapi_json_etag;
}

/* The audit gauge, read from the store on the HTTP thread (the store's only user). */
static double api_system_audit_records(void *userdata)
{
    struct store *s = userdata;
    int64_t seq = 0;
    if (s->ops->audit_head(s, &seq) != STORE_OK) {
        return NAN;
    }
    return (double)seq;
}

void api_system_metrics(struct api_ctx *ctx)
{
    static const char help[] = "Records in the audit log (the seq of the last one).";
    api_reply(ctx, 200);
    ctx->resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    /* Registered for this scrape only: the store belongs to this thread, and a registration
     * left behind would outlive the store. */
    metrics_gauge_fn("airlock_audit_records", help, api_system_audit_records, ctx->store);
    int rc = metrics_render(&ctx->resp->body);
    metrics_gauge_fn("airlock_audit_records", help, NULL, NULL);
    if (rc != 0) {
        api_error(ctx, 500, "INTERNAL", "the metrics did not fit the response");
    }
}
