/*
 * router.c - the route table and the request path through it (router.h): admission from the
 * headers, dispatch once the body is in. A route that writes runs as a job of the writer, its
 * request suspended until the job's batch has committed, and the job authenticates again on the
 * writer's connection: a key revoked while the body was arriving writes nothing.
 *
 * Authentication comes before any lookup so an outsider learns nothing about which principals
 * or departments exist; a refusal is answered and audited once, with the reason auth_check gave
 * (Redis ACL's model). The rate limit comes before anything that writes: requests that need no
 * key (public routes, 404, 405, 413) are limited by client address at once; the others after
 * the key lookup (a read), by key prefix when the key is valid and, when it is not, by client
 * address in a far smaller bucket of its own (unauth_limit), so a 401 is only answered (and
 * tallied for the audit log, api_denied) for requests within that limit.
 */
#include "router.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "auth.h"
#include "json.h"
#include "readers.h"
#include "session.h"
#include "ui.h"
#include "writer.h"

#define SEGMENTS_MAX 8

struct route {
    const char *method;
    const char *path;
    api_handler_fn *handler;
    struct auth_rule rule;
    int writes; /* WRITES: the handler runs as a job of the writer; READS: on a reader */
    /* WRITES only, may be NULL: runs first on the request thread, with no store, for a check the
     * writer must never wait on; when it answers, the job never runs */
    api_check_fn *before;
    int snapshot; /* its body is a snapshot's tar: up to snapshot_limit_bytes */
};

/* a row's last members: where its handler runs, and what runs before it */
#define READS                  0, NULL, 0
#define WRITES                 1, NULL, 0
#define WRITES_CHECKED(check)  1, check, 0
#define WRITES_SNAPSHOT(check) 1, check, 1

#define ADMIN     AUTH_ROLE_ADMIN
#define READERS   (AUTH_ROLE_ADMIN | AUTH_ROLE_AUDITOR)
#define ANY_ROLES AUTH_ROLES_ALL

/* clang-format off */
static const struct route routes[] = {
    { "GET",    "/healthz",                          api_system_healthz,          { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/readyz",                           api_system_readyz,           { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/v1/audit",                         api_audit_list,              { AUTH_ANY_DEPARTMENT, READERS }, READS },
    { "GET",    "/v1/audit/export",                  api_audit_export,            { AUTH_ANY_DEPARTMENT, READERS }, WRITES },
    { "GET",    "/v1/audit/verify",                  api_audit_verify,            { AUTH_ANY_DEPARTMENT, READERS }, READS },
    { "GET",    "/v1/audit/checkpoint",              api_audit_checkpoint,        { AUTH_ANY_DEPARTMENT, READERS }, READS },
    { "GET",    "/v1/me",                            api_principals_me,           { AUTH_PRINCIPAL, 0 }, READS },
    { "POST",   "/v1/departments",                   api_departments_create,      { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/departments",                   api_departments_list,        { AUTH_ANY_DEPARTMENT, ANY_ROLES }, READS },
    { "PUT",    "/v1/departments/{d}/policy",        api_departments_policy,      { AUTH_DEPARTMENT, ADMIN }, WRITES },
    { "PATCH",  "/v1/departments/{d}",               api_departments_patch,       { AUTH_DEPARTMENT, ADMIN }, WRITES },
    { "DELETE", "/v1/departments/{d}",               api_departments_delete,      { AUTH_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/principals",                    api_principals_create,       { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/principals",                    api_principals_list,         { AUTH_ANY_DEPARTMENT, READERS }, READS },
    { "POST",   "/v1/principals/{p}/keys",           api_principals_key_create,   { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "DELETE", "/v1/principals/{p}/keys/{prefix}",  api_principals_key_revoke,   { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/principals/{p}/roles",          api_principals_role_grant,   { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "DELETE", "/v1/principals/{p}/roles",          api_principals_role_revoke,  { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/principals/{p}",                api_principals_get,          { AUTH_ANY_DEPARTMENT, READERS }, READS },
    { "PATCH",  "/v1/principals/{p}",                api_principals_patch,        { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "DELETE", "/v1/principals/{p}",                api_principals_delete,       { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/templates",                     api_templates_create,        { AUTH_RESOURCE, AUTH_ROLE_AUTHOR }, WRITES },
    { "GET",    "/v1/templates",                     api_templates_list,          { AUTH_ANY_DEPARTMENT, ANY_ROLES }, READS },
    { "GET",    "/v1/templates/{t}",                 api_templates_get,           { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "POST",   "/v1/templates/{t}/versions",        api_versions_create,         { AUTH_RESOURCE, AUTH_ROLE_AUTHOR }, WRITES },
    { "GET",    "/v1/templates/{t}/versions/{v}",    api_versions_get,            { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "GET",    "/v1/templates/{t}/versions/{v}/diff", api_versions_diff,         { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "GET",    "/v1/templates/{t}/versions/{v}/types", api_versions_types,       { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "GET",    "/v1/templates/{t}/versions/{v}/replay", api_versions_replay,     { AUTH_RESOURCE, ADMIN | AUTH_ROLE_AUDITOR | AUTH_ROLE_APPROVER | AUTH_ROLE_AUTHOR }, READS },
    { "POST",   "/v1/templates/{t}/versions/{v}/submit", api_versions_submit,     { AUTH_RESOURCE, AUTH_ROLE_AUTHOR }, WRITES },
    { "POST",   "/v1/templates/{t}/versions/{v}/approve", api_versions_approve,   { AUTH_RESOURCE, AUTH_ROLE_APPROVER }, WRITES },
    { "POST",   "/v1/templates/{t}/versions/{v}/reject", api_versions_reject,     { AUTH_RESOURCE, AUTH_ROLE_APPROVER }, WRITES },
    { "POST",   "/v1/templates/{t}/versions/{v}/revoke", api_versions_revoke,     { AUTH_RESOURCE, AUTH_ROLE_APPROVER | ADMIN }, WRITES },
    { "POST",   "/v1/connectors",                    api_connectors_create,       { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/connectors",                    api_connectors_list,         { AUTH_ANY_DEPARTMENT, ANY_ROLES }, READS },
    { "GET",    "/v1/connectors/{c}",                api_connectors_get,          { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "PATCH",  "/v1/connectors/{c}",                api_connectors_patch,        { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "DELETE", "/v1/connectors/{c}",                api_connectors_delete,       { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/mounts",                        api_mounts_create,           { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/mounts",                        api_mounts_list,             { AUTH_ANY_DEPARTMENT, ANY_ROLES }, READS },
    { "DELETE", "/v1/mounts/{m}",                    api_mounts_delete,           { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/webhooks",                      api_webhooks_create,         { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "GET",    "/v1/webhooks",                      api_webhooks_list,           { AUTH_ANY_DEPARTMENT, ADMIN }, READS },
    { "DELETE", "/v1/webhooks/{id}",                 api_webhooks_delete,         { AUTH_ANY_DEPARTMENT, ADMIN }, WRITES },
    { "POST",   "/v1/runs",                          api_runs_create,             { AUTH_RESOURCE, AUTH_ROLE_AGENT }, READS },
    { "GET",    "/v1/runs",                          api_runs_list,               { AUTH_ANY_DEPARTMENT, ANY_ROLES }, READS },
    { "GET",    "/v1/runs/{id}",                     api_runs_get,                { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "POST",   "/v1/runs/{id}/cancel",              api_runs_cancel,             { AUTH_RESOURCE, AUTH_ROLE_AGENT | AUTH_ROLE_APPROVER | ADMIN }, WRITES },
    { "POST",   "/v1/runs/{id}/fork",                api_runs_fork,               { AUTH_RESOURCE, AUTH_ROLE_AGENT }, READS },
    { "GET",    "/v1/runs/{id}/files",               api_runs_files,              { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "GET",    "/v1/runs/{id}/files/{path+}",       api_runs_file,               { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "GET",    "/v1/runs/{id}/workspace.tar",       api_runs_workspace_tar,      { AUTH_RESOURCE, ANY_ROLES }, READS },
    { "POST",   "/v1/snapshots",                     api_snapshots_create,        { AUTH_RESOURCE, AUTH_ROLE_AGENT }, WRITES_SNAPSHOT(api_snapshots_create_before) },
    { "GET",    "/v1/approvals",                     api_approvals_list,          { AUTH_ANY_DEPARTMENT, AUTH_ROLE_APPROVER | READERS }, READS },
    { "POST",   "/v1/approvals/{id}/approve",        api_approvals_approve,       { AUTH_RESOURCE, AUTH_ROLE_APPROVER }, WRITES },
    { "POST",   "/v1/approvals/{id}/deny",           api_approvals_deny,          { AUTH_RESOURCE, AUTH_ROLE_APPROVER }, WRITES },
    { "POST",   "/v1/approvals/{id}/answer",         api_approvals_answer,        { AUTH_RESOURCE, AUTH_ROLE_APPROVER }, WRITES_CHECKED(api_approvals_answer_before) },
    { "POST",   "/v1/mcp",                           api_mcp_post,                { AUTH_RESOURCE, AUTH_ROLE_AGENT }, READS },
    { "GET",    "/v1/openapi.json",                  api_system_openapi,          { AUTH_PUBLIC, 0 }, READS },
    /* single sign-on of the web UI (api_auth.c, docs/sso.md) */
    { "GET",    "/auth/options",                     api_auth_options,            { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/auth/login",                       api_auth_login,              { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/auth/callback",                    api_auth_callback,           { AUTH_PUBLIC, 0 }, WRITES_CHECKED(api_auth_callback_before) },
    { "POST",   "/auth/logout",                      api_auth_logout,             { AUTH_PRINCIPAL, 0 }, WRITES },
    { "GET",    "/metrics",                          api_system_metrics,          { AUTH_PUBLIC, 0 }, READS },
    /* the web UI (ui.c): pages answer the HTML shell, /ui/ the assets; public, since what a
     * page shows comes from /v1/ with the user's key */
    { "GET",    "/",                                 ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/overview",                         ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/approvals",                        ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/templates",                        ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/templates/{t}",                    ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/templates/{t}/versions/{v}",       ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/runs",                             ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/runs/{id}",                        ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/audit",                            ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/admin",                            ui_page,                     { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/ui/{asset}",                       ui_asset,                    { AUTH_PUBLIC, 0 }, READS },
    { "GET",    "/ui/pages/{asset}",                 ui_asset,                    { AUTH_PUBLIC, 0 }, READS },
};
/* clang-format on */

#define NROUTES (sizeof routes / sizeof routes[0])

struct router_path {
    size_t n;
    int more; /* segments beyond the first SEGMENTS_MAX: only a {name+} pattern takes them */
    const char *seg[SEGMENTS_MAX];
    size_t len[SEGMENTS_MAX];
};

/* Splits "/a/b/c" into segments ("/" into none), the first SEGMENTS_MAX of them kept; -1 for
 * an empty segment or a trailing slash. */
static int router_split(const char *path, struct router_path *ret)
{
    ret->n = 0;
    ret->more = 0;
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
        if (len == 0) {
            return -1;
        }
        if (ret->n < SEGMENTS_MAX) {
            ret->seg[ret->n] = p;
            ret->len[ret->n] = len;
            ret->n++;
        } else {
            ret->more = 1;
        }
        if (!slash) {
            return 0;
        }
        p = slash + 1;
    }
}

/* A pattern's last segment {name+}: it takes the rest of the path, slashes included (a file's
 * path below a run: GET /v1/runs/{id}/files/{path+}). */
static int router_is_tail(const struct router_path *pat, size_t i)
{
    return i + 1 == pat->n && pat->len[i] > 3 && pat->seg[i][pat->len[i] - 2] == '+';
}

/* 1 when the request path fits the pattern; the {name} values go to ctx (0 and ctx untouched
 * otherwise). A parameter value longer than a name is a match that no handler will find; a
 * {name+} value is ctx->tail instead, borrowed from the request's path. */
static int router_match(const struct router_path *req, const char *pattern, struct api_ctx *ctx)
{
    struct router_path pat;
    if (router_split(pattern, &pat) != 0) {
        return 0;
    }
    int tail = pat.n > 0 && router_is_tail(&pat, pat.n - 1);
    if (tail ? req->n < pat.n : (pat.n != req->n || req->more)) {
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
    ctx->tail = tail ? req->seg[pat.n - 1] : NULL;
    for (size_t i = 0; i < pat.n && nparams < API_PARAMS_MAX; i++) {
        if (pat.seg[i][0] != '{' || router_is_tail(&pat, i)) {
            continue;
        }
        struct api_param *prm = &ctx->params[nparams++];
        /* the pattern is a literal of the table: the name may point into it */
        prm->name = pat.seg[i] + 1;
        prm->name_len = pat.len[i] - 2;
        size_t vlen = req->len[i] <= STORE_NAME_MAX ? req->len[i] : 0;
        memcpy(prm->value, req->seg[i], vlen);
        prm->value[vlen] = '\0';
    }
    ctx->nparams = nparams;
    return 1;
}

/* 1 after answering 429 when bucket `key` ("key:PREFIX", or the client address) of `limit` is
 * empty. */
static int router_limited_by(struct ratelimit *limit, const struct http_request *req,
                             struct http_response *resp, const char *prefix)
{
    char key[RATELIMIT_KEY_MAX + 1];
    unsigned retry = 0;
    if (!limit) {
        return 0;
    }
    if (prefix) {
        snprintf(key, sizeof key, "key:%s", prefix);
    } else {
        snprintf(key, sizeof key, "%s", req->client[0] ? req->client : "unknown");
    }
    if (ratelimit_take(limit, key, &retry) == 0) {
        return 0;
    }
    api_error_resp(req, resp, 429, "RATE_LIMITED", "too many requests: retry later");
    resp->retry_after_s = retry;
    return 1;
}

static int router_limited(struct router *r, const struct http_request *req,
                          struct http_response *resp, const char *prefix)
{
    return router_limited_by(r->limit, req, resp, prefix);
}

/* A request's state from its admission to its end (http_request.app). */
struct router_req {
    struct router *router;
    const struct route *route;
    struct api_ctx ctx; /* route, rule and params from admission; the rest at dispatch */
    struct auth_principal who;
    unsigned refused; /* 401 or 403 decided at admission, recorded at dispatch */
    char why[AUTH_WHY_MAX];
    /* a route that writes: the job, its answer, and the suspended request it goes to */
    struct writer_job job;
    struct http_response answer;
    struct http_deferred *deferred;
    /* a request of a web UI session (no Authorization header): its cookie's token and the
     * X-CSRF-Token it sent, read at admission (the writer's job reads them again) */
    char session_token[SESSION_TOKEN_LEN + 1];
    char csrf_header[SESSION_CSRF_LEN + 1];
};

static void router_req_free(void *app)
{
    struct router_req *rq = app;
    if (rq) {
        json_doc_free(rq->ctx.doc);
        http_response_done(&rq->answer);
        free(rq->ctx.claims);
        free(rq);
    }
}

/* The route of req (404 or 405 answered when there is none), its parameters into ctx. */
static const struct route *router_route(const struct http_request *req, struct http_response *resp,
                                        struct api_ctx *ctx)
{
    struct router_path path;
    char allow[sizeof resp->allow] = ""; /* the methods of the path's routes, for a 405 */
    if (router_split(req->path, &path) == 0) {
        for (size_t i = 0; i < NROUTES; i++) {
            if (!router_match(&path, routes[i].path, NULL)) {
                continue;
            }
            /* HEAD is GET without the body (libmicrohttpd leaves the body out) */
            if (strcmp(routes[i].method, req->method) == 0 ||
                (strcmp(req->method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0)) {
                router_match(&path, routes[i].path, ctx);
                ctx->method = routes[i].method;
                ctx->route = routes[i].path;
                ctx->rule = routes[i].rule;
                return &routes[i];
            }
            size_t used = strlen(allow);
            snprintf(allow + used, sizeof allow - used, "%s%s", used ? ", " : "", routes[i].method);
        }
    }
    if (allow[0]) {
        memcpy(resp->allow, allow, sizeof allow);
        api_error_resp(req, resp, 405, "METHOD_NOT_ALLOWED", "method not allowed here");
    } else {
        api_error_resp(req, resp, 404, "NOT_FOUND", "no such route");
    }
    return NULL;
}

/* Authenticates on ctx's store and checks the route's roles: 0 with ctx->who set; -1 after
 * answering (a 500, a 429), or with the refusal (401, 403) in rq->refused and rq->why for the
 * caller to record. With `limit`, the key's (or the address's) rate limit is taken between the
 * two. */
static int router_authorize(struct router_req *rq, int limit)
{
    struct api_ctx *ctx = &rq->ctx;
    enum auth_result ar = AUTH_OK;
    if (!ctx->req->authorization && rq->session_token[0]) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        ar = session_authenticate(ctx->store, rq->session_token, now_ms, &rq->who, rq->why);
    } else {
        ar = auth_authenticate(ctx->store, ctx->req->authorization, &rq->who, rq->why);
    }
    if (ar == AUTH_STORE_FAILED) {
        api_error_resp(ctx->req, ctx->resp, 500, "INTERNAL", "the store failed");
        return -1;
    }
    /* a request refused for its key draws from its address's smaller bucket: a flood of bad
     * keys is held to far fewer refusals than a key's own requests */
    struct router *r = rq->router;
    struct ratelimit *bucket = ar == AUTH_OK || !r->unauth_limit ? r->limit : r->unauth_limit;
    if (limit &&
        router_limited_by(bucket, ctx->req, ctx->resp, ar == AUTH_OK ? rq->who.key_prefix : NULL)) {
        return -1;
    }
    if (ar != AUTH_OK) {
        ctx->who = NULL;
        rq->refused = 401;
        return -1;
    }
    snprintf(ctx->resp->actor, sizeof ctx->resp->actor, "%s", rq->who.name);
    ctx->who = &rq->who;
    /* a session's change must carry its CSRF token: another site can make the browser send
     * the cookie, never this header with this value */
    int safe = strcmp(ctx->method, "GET") == 0 || strcmp(ctx->method, "HEAD") == 0;
    if (rq->who.session && !safe &&
        (strlen(rq->csrf_header) != SESSION_CSRF_LEN ||
         CRYPTO_memcmp(rq->csrf_header, rq->who.csrf, SESSION_CSRF_LEN) != 0)) {
        snprintf(rq->why, sizeof rq->why,
                 "a session's %s needs its X-CSRF-Token (missing or wrong)", ctx->method);
        rq->refused = 403;
        return -1;
    }
    /* runs, forks, snapshots and MCP are an agent's, with its API key: a run's start and its
     * waiting client are checked against the key it came with (auth_key_active) */
    if (rq->who.session && rq->route->rule.roles == AUTH_ROLE_AGENT) {
        snprintf(rq->why, sizeof rq->why,
                 "%s %s is an agent's: it takes an API key, not a session of the web UI",
                 ctx->method, ctx->route);
        rq->refused = 403;
        return -1;
    }
    const char *dept = rq->route->rule.scope == AUTH_DEPARTMENT ? api_param(ctx, "d") : NULL;
    if (auth_check(&rq->who, &rq->route->rule, dept, rq->why) != AUTH_OK) {
        rq->refused = 403;
        return -1;
    }
    return 0;
}

/* Points ctx at the request as it is now (admission and dispatch see different ones). */
static void router_ctx(struct router_req *rq, const struct http_request *req,
                       struct http_response *resp, struct store *store, struct writer_tx *tx)
{
    struct router *r = rq->router;
    rq->ctx.store = store;
    rq->ctx.tx = tx;
    rq->ctx.svc = r->svc;
    rq->ctx.req = req;
    rq->ctx.resp = resp;
    rq->ctx.secret_keys = r->secret_keys;
}

void router_admit(void *userdata, struct http_request *req, struct http_response *resp)
{
    struct router *r = userdata;
    struct router_req *rq = calloc(1, sizeof *rq);
    if (!rq) {
        api_error_resp(req, resp, 500, "INTERNAL", "out of memory");
        return;
    }
    req->app = rq;
    req->app_free = router_req_free;
    rq->router = r;
    router_ctx(rq, req, resp, NULL, NULL);
    rq->route = router_route(req, resp, &rq->ctx);
    size_t cap = rq->route && rq->route->snapshot && r->snapshot_limit_bytes
                         ? r->snapshot_limit_bytes
                         : r->body_limit_bytes;
    if (cap != r->body_limit_bytes) {
        req->body_limit_bytes = cap; /* http.c reads the body up to it */
    }
    int too_large = req->has_content_length && req->content_length > cap;
    if ((!rq->route || rq->route->rule.scope == AUTH_PUBLIC || too_large) &&
        router_limited(r, req, resp, NULL)) {
        return;
    }
    if (!rq->route) {
        return; /* answered 404 or 405 */
    }
    snprintf(resp->route, sizeof resp->route, "%s", rq->route->path);
    if (too_large) {
        api_error_resp(req, resp, 413, "PAYLOAD_TOO_LARGE", "the body is over the size limit");
        return;
    }
    if (rq->route->rule.scope == AUTH_PUBLIC) {
        return; /* go on: read the body */
    }
    if (!req->authorization) {
        const char *csrf = http_header(req, SESSION_CSRF_HEADER);
        if (session_cookie_get(http_header(req, "Cookie"), SESSION_COOKIE, rq->session_token,
                               sizeof rq->session_token) != 0) {
            rq->session_token[0] = '\0';
        }
        snprintf(rq->csrf_header, sizeof rq->csrf_header, "%s",
                 csrf && strlen(csrf) <= SESSION_CSRF_LEN ? csrf : "");
    }
    rq->ctx.store = readers_take(r->readers);
    if (!rq->ctx.store) {
        api_error_resp(req, resp, 500, "INTERNAL", "the store failed");
        return;
    }
    (void)router_authorize(rq, 1);
    readers_give(r->readers, rq->ctx.store);
    rq->ctx.store = NULL;
    if (rq->refused) {
        api_denied(&rq->ctx, rq->refused, rq->why); /* answered once recorded, its body unread */
    }
}

/* A route that writes, on the writer's thread inside its batch: authenticated again on the
 * writer's connection (nothing changes keys or grants between that read and this job's
 * commit), then the handler. Its failures are in its answer; it rolls back its own writes. */
static enum store_rc router_job(struct writer_tx *tx, void *arg)
{
    struct router_req *rq = arg;
    router_ctx(rq, rq->ctx.req, &rq->answer, writer_store(tx), tx);
    if (rq->route->rule.scope == AUTH_PUBLIC) {
        rq->ctx.who = NULL; /* the sign-in's callback: nobody is signed in yet */
        rq->route->handler(&rq->ctx);
    } else if (router_authorize(rq, 0) == 0) {
        rq->route->handler(&rq->ctx);
    } else if (rq->refused) {
        api_denied(&rq->ctx, rq->refused, rq->why);
    }
    json_doc_free(rq->ctx.doc);
    rq->ctx.doc = NULL;
    return STORE_OK;
}

static void router_job_done(void *arg, enum store_rc rc)
{
    struct router_req *rq = arg;
    if (rc != STORE_OK) {
        http_response_done(&rq->answer);
        api_error_resp(rq->ctx.req, &rq->answer, 500, "INTERNAL", "the store failed");
    }
    if (rq->deferred) {
        http_deferred_reply(rq->deferred, &rq->answer);
    }
}

void router_dispatch(void *userdata, const struct http_request *req, struct http_response *resp)
{
    struct router *r = userdata;
    struct router_req *rq = req->app;
    if (!rq || !rq->route) {
        api_error_resp(req, resp, 500, "INTERNAL", "the request was not admitted");
        return;
    }
    router_ctx(rq, req, resp, NULL, NULL);
    /* the log line's and the metrics' (admission answered with another response) */
    snprintf(resp->route, sizeof resp->route, "%s", rq->route->path);
    if (rq->ctx.who) {
        snprintf(resp->actor, sizeof resp->actor, "%s", rq->who.name);
    }
    if (req->body_too_large) {
        if (!router_limited(r, req, resp, NULL)) {
            api_error_resp(req, resp, 413, "PAYLOAD_TOO_LARGE", "the body is over the size limit");
        }
        return;
    }
    if (rq->route->writes && rq->route->before) {
        rq->ctx.who = &rq->who;
        int answered = rq->route->before(&rq->ctx) != 0;
        json_doc_free(rq->ctx.doc);
        rq->ctx.doc = NULL;
        if (answered) {
            return;
        }
    }
    if (rq->route->writes) {
        http_response_init(&rq->answer);
        snprintf(rq->answer.route, sizeof rq->answer.route, "%s", resp->route);
        snprintf(rq->answer.actor, sizeof rq->answer.actor, "%s", resp->actor);
        rq->job.fn = router_job;
        rq->job.done = router_job_done;
        rq->job.arg = rq;
        rq->deferred = http_defer(req, resp);
        if (rq->deferred) {
            writer_submit(r->writer, &rq->job);
            return;
        }
        /* no connection to suspend (a harness): wait for the commit here */
        router_job_done(rq, writer_call(r->writer, router_job, rq));
        http_response_move(resp, &rq->answer);
        return;
    }
    rq->ctx.store = readers_take(r->readers);
    if (!rq->ctx.store) {
        api_error_resp(req, resp, 500, "INTERNAL", "the store failed");
        return;
    }
    rq->ctx.who = rq->route->rule.scope == AUTH_PUBLIC ? NULL : &rq->who;
    /* every read of one request from one snapshot */
    struct store *reader = rq->ctx.store;
    if (reader->ops->read_begin) {
        (void)reader->ops->read_begin(reader);
    }
    rq->route->handler(&rq->ctx);
    if (reader->ops->read_end) {
        (void)reader->ops->read_end(reader);
    }
    readers_give(r->readers, reader);
    rq->ctx.store = NULL;
}

void router_handle(void *userdata, struct http_request *req, struct http_response *resp)
{
    router_admit(userdata, req, resp);
    if (resp->status == 0 && !resp->deferred) {
        router_dispatch(userdata, req, resp);
    }
}

/* enum auth_scope's names, in its order */
static const char *const router_scope_names[] = { "public", "principal", "any_department",
                                                  "department", "resource" };

void router_print(FILE *out)
{
    fputs("[\n", out);
    for (size_t i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        int ui = rt->handler == ui_page || rt->handler == ui_asset;
        fprintf(out, "  {\"method\":\"%s\",\"path\":\"%s\",\"scope\":\"%s\",\"ui\":%s,\"roles\":[",
                rt->method, rt->path, router_scope_names[rt->rule.scope], ui ? "true" : "false");
        int first = 1;
        for (unsigned bit = 1; bit <= AUTH_ROLE_AGENT; bit <<= 1) {
            if (rt->rule.roles & bit) {
                fprintf(out, "%s\"%s\"", first ? "" : ",", gov_role_name(bit));
                first = 0;
            }
        }
        fprintf(out, "]}%s\n", i + 1 < NROUTES ? "," : "");
    }
    fputs("]\n", out);
}
