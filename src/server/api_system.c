/*
 * api_system.c - the unauthenticated probes: /healthz answers while the process serves HTTP,
 * /readyz only while the store answers a query too (a load balancer takes the node out
 * otherwise).
 */
#include "api.h"

void api_system_healthz(struct api_ctx *ctx)
{
    api_reply(ctx, 200);
    buf_append_str(&ctx->resp->body, "{\"status\":\"ok\"}\n");
}

void api_system_readyz(struct api_ctx *ctx)
{
    if (ctx->store->ops->ping(ctx->store) != STORE_OK) {
        api_reply(ctx, 503);
        buf_append_str(&ctx->resp->body, "{\"status\":\"unavailable\",\"reason\":");
        api_str(&ctx->resp->body, ctx->store->ops->errmsg(ctx->store));
        buf_append_str(&ctx->resp->body, "}\n");
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(&ctx->resp->body, "{\"status\":\"ready\"}\n");
}
