/*
 * router.c - the route table and the request path through it: match, authenticate, authorise,
 * parse nothing (handlers read their own bodies through api_body), call. Authentication comes
 * before any lookup so an outsider learns nothing about which principals or departments exist;
 * a refusal is answered and audited here, once, with the reason auth_check gave (Redis ACL's
 * model). A body over the cap is refused before authentication: it was never read.
 *
 * The rate limit comes before anything that writes: requests that need no key (public routes,
 * 404, 405, 413) are limited by client address at once; the others after the key lookup (a
 * read), by key prefix when the key is valid and by client address when it is not, so a 401's
 * audit record is only written for requests within the address's limit.
 */
#include "router.h"

#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "auth.h"
#include "json.h"
#include "runs.h"
#include "ui.h"

#define SEGMENTS_MAX 8

struct route {
    const char *method;
    const char *path;
    api_handler_fn *handler;
    struct auth_rule rule;
};

#define ADMIN     AUTH_ROLE_ADMIN
#define READERS   (AUTH_ROLE_ADMIN | AUTH_ROLE_AUDITOR)
#define ANY_ROLES AUTH_ROLES_ALL

/* clang-format off */
static const struct route routes[] = {
    { "GET",    "/healthz",                          api_system_healthz,          { AUTH_PUBLIC, 0 } },
    { "GET",    "/readyz",                           api_system_readyz,           { AUTH_PUBLIC, 0 } },
    { "GET",    "/v1/audit",                         api_audit_list,              { AUTH_ANY_DEPARTMENT, READERS } },
    { "GET",    "/v1/audit/export",                  api_audit_export,            { AUTH_ANY_DEPARTMENT, READERS } },
    { "GET",    "/v1/audit/verify",                  api_audit_verify,            { AUTH_ANY_DEPARTMENT, READERS } },
    { "GET",    "/v1/audit/checkpoint",              api_audit_checkpoint,        { AUTH_ANY_DEPARTMENT, READERS } },
    { "GET",    "/v1/me",                            api_principals_me,           { AUTH_PRINCIPAL, 0 } },
    { "POST",   "/v1/departments",                   api_departments_create,      { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "GET",    "/v1/departments",                   api_departments_list,        { AUTH_ANY_DEPARTMENT, ANY_ROLES } },
    { "PUT",    "/v1/departments/{d}/policy",        api_departments_policy,      { AUTH_DEPARTMENT, ADMIN } },
    { "POST",   "/v1/principals",                    api_principals_create,       { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "GET",    "/v1/principals",                    api_principals_list,         { AUTH_ANY_DEPARTMENT, READERS } },
    { "POST",   "/v1/principals/{p}/keys",           api_principals_key_create,   { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "DELETE", "/v1/principals/{p}/keys/{prefix}",  api_principals_key_revoke,   { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "POST",   "/v1/principals/{p}/roles",          api_principals_role_grant,   { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "DELETE", "/v1/principals/{p}/roles",          api_principals_role_revoke,  { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "POST",   "/v1/templates",                     api_templates_create,        { AUTH_RESOURCE, AUTH_ROLE_AUTHOR } },
    { "GET",    "/v1/templates",                     api_templates_list,          { AUTH_ANY_DEPARTMENT, ANY_ROLES } },
    { "GET",    "/v1/templates/{t}",                 api_templates_get,           { AUTH_RESOURCE, ANY_ROLES } },
    { "POST",   "/v1/templates/{t}/versions",        api_versions_create,         { AUTH_RESOURCE, AUTH_ROLE_AUTHOR } },
    { "GET",    "/v1/templates/{t}/versions/{v}",    api_versions_get,            { AUTH_RESOURCE, ANY_ROLES } },
    { "GET",    "/v1/templates/{t}/versions/{v}/diff", api_versions_diff,         { AUTH_RESOURCE, ANY_ROLES } },
    { "GET",    "/v1/templates/{t}/versions/{v}/types", api_versions_types,       { AUTH_RESOURCE, ANY_ROLES } },
    { "POST",   "/v1/templates/{t}/versions/{v}/submit", api_versions_submit,     { AUTH_RESOURCE, AUTH_ROLE_AUTHOR } },
    { "POST",   "/v1/templates/{t}/versions/{v}/approve", api_versions_approve,   { AUTH_RESOURCE, AUTH_ROLE_APPROVER } },
    { "POST",   "/v1/templates/{t}/versions/{v}/reject", api_versions_reject,     { AUTH_RESOURCE, AUTH_ROLE_APPROVER } },
    { "POST",   "/v1/templates/{t}/versions/{v}/revoke", api_versions_revoke,     { AUTH_RESOURCE, AUTH_ROLE_APPROVER | ADMIN } },
    { "POST",   "/v1/connectors",                    api_connectors_create,       { AUTH_ANY_DEPARTMENT, ADMIN } },
    { "GET",    "/v1/connectors",                    api_connectors_list,         { AUTH_ANY_DEPARTMENT, ANY_ROLES } },
    { "GET",    "/v1/connectors/{c}",                api_connectors_get,          { AUTH_RESOURCE, ANY_ROLES } },
    { "POST",   "/v1/runs",                          api_runs_create,             { AUTH_RESOURCE, AUTH_ROLE_AGENT } },
    { "GET",    "/v1/runs",                          api_runs_list,               { AUTH_ANY_DEPARTMENT, ANY_ROLES } },
    { "GET",    "/v1/runs/{id}",                     api_runs_get,                { AUTH_RESOURCE, ANY_ROLES } },
    { "POST",   "/v1/runs/{id}/cancel",              api_runs_cancel,             { AUTH_RESOURCE, AUTH_ROLE_AGENT | AUTH_ROLE_APPROVER | ADMIN } },
    { "GET",    "/v1/approvals",                     api_approvals_list,          { AUTH_ANY_DEPARTMENT, AUTH_ROLE_APPROVER | READERS } },
    { "POST",   "/v1/approvals/{id}/approve",        api_approvals_approve,       { AUTH_RESOURCE, AUTH_ROLE_APPROVER } },
    { "POST",   "/v1/approvals/{id}/deny",           api_approvals_deny,          { AUTH_RESOURCE, AUTH_ROLE_APPROVER } },
    { "POST",   "/v1/mcp",                           api_mcp_post,                { AUTH_RESOURCE, AUTH_ROLE_AGENT } },
    { "GET",    "/v1/openapi.json",                  api_system_openapi,          { AUTH_PUBLIC, 0 } },
    { "GET",    "/metrics",                          api_system_metrics,          { AUTH_PUBLIC, 0 } },
    /* the web UI (ui.c): pages answer the HTML shell, /ui/ the assets; public, since what a
     * page shows comes from /v1/ with the user's key */
    { "GET",    "/",                                 ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/overview",                         ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/approvals",                        ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/templates",                        ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/templates/{t}",                    ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/templates/{t}/versions/{v}",       ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/runs",                             ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/runs/{id}",                        ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/audit",                            ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/admin",                            ui_page,                     { AUTH_PUBLIC, 0 } },
    { "GET",    "/ui/{asset}",                       ui_asset,                    { AUTH_PUBLIC, 0 } },
    { "GET",    "/ui/pages/{asset}",                 ui_asset,                    { AUTH_PUBLIC, 0 } },
};
/* clang-format on */

#define NROUTES (sizeof routes / sizeof routes[0])

struct router_path {
    size_t n;
    const char *seg[SEGMENTS_MAX];
    size_t len[SEGMENTS_MAX];
};

/* Splits "/a/b/c" into segments ("/" into none); -1 for too many, an empty segment or a
 * trailing slash. */
static int router_split(const char *path, struct router_path *ret)
{
    ret->n = 0;
    if (path[0] != '/') {
        return -1;
    }
    if (path[1] == '\0') {
        return 0;
    }
    const char *p = path + 1;
    while (1) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || ret->n == SEGMENTS_MAX) {
            return -1;
        }
        ret->seg[ret->n] = p;
        ret->len[ret->n] = len;
        ret->n++;
        if (!slash) {
            return 0;
        }
        p = slash + 1;
    }
}

/* 1 when the request path fits the pattern; the {name} values go to ctx (0 and ctx untouched
 * otherwise). A parameter value longer than a name is a match that no handler will find. */
static int router_match(const struct router_path *req, const char *pattern, struct api_ctx *ctx)
{
    struct router_path pat;
    if (router_split(pattern, &pat) != 0 || pat.n != req->n) {
        return 0;
    }
    size_t nparams = 0;
    for (size_t i = 0; i < pat.n; i++) {
        if (pat.seg[i][0] == '{') {
            continue;
        }
        if (pat.len[i] != req->len[i] || memcmp(pat.seg[i], req->seg[i], pat.len[i]) != 0) {
            return 0;
        }
    }
    if (!ctx) {
        return 1;
    }
    for (size_t i = 0; i < pat.n && nparams < API_PARAMS_MAX; i++) {
        if (pat.seg[i][0] != '{') {
            continue;
        }
        struct api_param *prm = &ctx->params[nparams++];
        /* the pattern is a literal of the table: the name may point into it */
        prm->name = pat.seg[i] + 1;
        prm->name_len = pat.len[i] - 2;
        size_t vlen = req->len[i] < STORE_NAME_MAX ? req->len[i] : STORE_NAME_MAX;
        memcpy(prm->value, req->seg[i], vlen);
        prm->value[vlen] = '\0';
        if (req->len[i] > STORE_NAME_MAX) {
            prm->value[0] = '\0';
        }
    }
    ctx->nparams = nparams;
    return 1;
}

/* 1 after answering 429 when bucket `key` ("key:PREFIX", or the client address) is empty. */
static int router_limited(struct router *r, const struct http_request *req,
                          struct http_response *resp, const char *prefix)
{
    char key[RATELIMIT_KEY_MAX + 1];
    unsigned retry = 0;
    if (!r->limit) {
        return 0;
    }
    if (prefix) {
        snprintf(key, sizeof key, "key:%s", prefix);
    } else {
        snprintf(key, sizeof key, "%s", req->client[0] ? req->client : "unknown");
    }
    if (ratelimit_take(r->limit, key, &retry) == 0) {
        return 0;
    }
    api_error_resp(req, resp, 429, "RATE_LIMITED", "too many requests: retry later");
    resp->retry_after_s = retry;
    return 1;
}

static void router_dispatch_locked(struct router *r, const struct http_request *req,
                                   struct http_response *resp);

/* Whether a route may read while a batch of the run writer is committed but not yet on the
 * disk: only one that reads nothing the writer writes (runs, approvals, the audit). Starting a
 * run reads principals, templates, versions and connectors, and its answers come from the
 * writer after its fsync; every other route waits for that fsync first (runs_wait_synced). */
static int router_unsynced_ok(const struct route *route)
{
    return route->handler == api_runs_create;
}

void router_dispatch(void *userdata, const struct http_request *req, struct http_response *resp)
{
    struct router *r = userdata;
    if (r->store_lock) {
        pthread_mutex_lock(r->store_lock);
    }
    router_dispatch_locked(r, req, resp);
    if (r->store && r->store->ops->read_end) {
        (void)r->store->ops->read_end(r->store);
    }
    if (r->store_lock) {
        pthread_mutex_unlock(r->store_lock);
    }
}

static void router_dispatch_locked(struct router *r, const struct http_request *req,
                                   struct http_response *resp)
{
    struct router_path path;
    struct api_ctx ctx;
    struct auth_principal who;
    const struct route *route = NULL;
    char why[AUTH_WHY_MAX] = "";
    int path_known = 0;

    memset(&ctx, 0, sizeof ctx);
    ctx.store = r->store;
    ctx.svc = r->svc;
    ctx.req = req;
    ctx.resp = resp;
    ctx.secret_key = r->secret_key;
    if (router_split(req->path, &path) == 0) {
        for (size_t i = 0; i < NROUTES; i++) {
            if (!router_match(&path, routes[i].path, NULL)) {
                continue;
            }
            path_known = 1;
            /* HEAD is GET without the body (libmicrohttpd leaves the body out) */
            if (strcmp(routes[i].method, req->method) == 0 ||
                (strcmp(req->method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0)) {
                route = &routes[i];
                router_match(&path, routes[i].path, &ctx);
                ctx.method = route->method;
                ctx.route = route->path;
                ctx.rule = route->rule;
                break;
            }
        }
    }
    if ((!route || route->rule.scope == AUTH_PUBLIC || req->body_too_large) &&
        router_limited(r, req, resp, NULL)) {
        return;
    }
    if (!route) {
        if (path_known) {
            char *allow = resp->allow;
            for (size_t i = 0; i < NROUTES; i++) {
                if (router_match(&path, routes[i].path, NULL)) {
                    size_t used = strlen(allow);
                    snprintf(allow + used, sizeof resp->allow - used, "%s%s", used ? ", " : "",
                             routes[i].method);
                }
            }
            api_error_resp(req, resp, 405, "METHOD_NOT_ALLOWED", "method not allowed here");
        } else {
            api_error_resp(req, resp, 404, "NOT_FOUND", "no such route");
        }
        return;
    }
    snprintf(resp->route, sizeof resp->route, "%s", route->path);
    /* starting a run reads the key, the principal, its roles, the version, the department and
     * the connectors: from one snapshot (router_dispatch ends it) */
    if (router_unsynced_ok(route) && r->store && r->store->ops->read_begin) {
        (void)r->store->ops->read_begin(r->store);
    }
    if (req->body_too_large) {
        api_error_resp(req, resp, 413, "PAYLOAD_TOO_LARGE", "the body is over the size limit");
        return;
    }
    if (route->rule.scope != AUTH_PUBLIC) {
        enum auth_result ar = auth_authenticate(r->store, req->authorization, &who, why);
        if (ar == AUTH_STORE_FAILED) {
            api_error_resp(req, resp, 500, "INTERNAL", "the store failed");
            return;
        }
        if (router_limited(r, req, resp, ar == AUTH_OK ? who.key_prefix : NULL)) {
            return;
        }
        if (ar != AUTH_OK) {
            api_denied(&ctx, 401, why);
            return;
        }
        snprintf(resp->actor, sizeof resp->actor, "%s", who.name);
        ctx.who = &who;
        const char *dept = route->rule.scope == AUTH_DEPARTMENT ? api_param(&ctx, "d") : NULL;
        if (auth_check(&who, &route->rule, dept, why) != AUTH_OK) {
            api_denied(&ctx, 403, why);
            return;
        }
    }
    if (!router_unsynced_ok(route) && r->svc && r->svc->runs) {
        runs_wait_synced(r->svc->runs);
    }
    route->handler(&ctx);
    json_doc_free(ctx.doc);
}

static const char *router_scope_name(enum auth_scope scope)
{
    switch (scope) {
    case AUTH_PUBLIC:
        return "public";
    case AUTH_PRINCIPAL:
        return "principal";
    case AUTH_ANY_DEPARTMENT:
        return "any_department";
    case AUTH_DEPARTMENT:
        return "department";
    case AUTH_RESOURCE:
        return "resource";
    }
    return "?";
}

void router_print(FILE *out)
{
    fputs("[\n", out);
    for (size_t i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        int ui = rt->handler == ui_page || rt->handler == ui_asset;
        fprintf(out, "  {\"method\":\"%s\",\"path\":\"%s\",\"scope\":\"%s\",\"ui\":%s,\"roles\":[",
                rt->method, rt->path, router_scope_name(rt->rule.scope), ui ? "true" : "false");
        int first = 1;
        for (unsigned bit = 1; bit <= AUTH_ROLE_AGENT; bit <<= 1) {
            if (rt->rule.roles & bit) {
                fprintf(out, "%s\"%s\"", first ? "" : ",", auth_role_name(bit));
                first = 0;
            }
        }
        fprintf(out, "]}%s\n", i + 1 < NROUTES ? "," : "");
    }
    fputs("]\n", out);
}
