/*
 * api.c - helpers shared by the route handlers: strict JSON bodies (one object, known members of
 * the right types, no duplicates, bounded depth; anything else is 400 before a handler acts),
 * the error body every failure carries, and the audit append of a change. The body's UTF-8 and
 * depth are checked by json_parse; a string holding NUL is refused here since names and enums
 * are C strings.
 */
#include "api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "runs.h"
#include "utf8.h"
#include "writer.h"

void api_str(struct buf *b, const char *s)
{
    json_write_string(b, s, strlen(s));
}

void api_member(struct buf *b, const char *key, const char *s)
{
    buf_append_str(b, key);
    if (s) {
        api_str(b, s);
    } else {
        buf_append_str(b, "null");
    }
}

void api_error_resp(const struct http_request *req, struct http_response *resp, unsigned status,
                    const char *code, const char *message)
{
    buf_reset(&resp->body);
    resp->status = status;
    resp->content_type = "application/json";
    api_member(&resp->body, "{\"error\":{\"code\":", code);
    buf_append_str(&resp->body, ",\"message\":");
    json_write_string(&resp->body, message, strnlen(message, 1024));
    api_member(&resp->body, ",\"request_id\":", req->request_id);
    buf_append_str(&resp->body, "}}\n");
}

void api_error(struct api_ctx *ctx, unsigned status, const char *code, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    api_error_resp(ctx->req, ctx->resp, status, code, message);
}

void api_store_failed(struct api_ctx *ctx)
{
    fprintf(stderr, "{\"log\":\"store\",\"request_id\":\"%s\",\"error\":", ctx->req->request_id);
    struct buf b;
    buf_init(&b, 1024);
    api_str(&b, ctx->store->ops->errmsg(ctx->store));
    fprintf(stderr, "%s}\n", b.data ? b.data : "\"\"");
    buf_done(&b);
    api_error(ctx, 500, "INTERNAL", "the store failed");
}

void api_reply(struct api_ctx *ctx, unsigned status)
{
    buf_reset(&ctx->resp->body);
    ctx->resp->status = status;
    ctx->resp->content_type = "application/json";
}

const char *api_param(const struct api_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->nparams; i++) {
        if (ctx->params[i].name_len == strlen(name) &&
            memcmp(ctx->params[i].name, name, ctx->params[i].name_len) == 0) {
            return ctx->params[i].value;
        }
    }
    return "";
}

int api_name_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > STORE_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) {
            return 0;
        }
    }
    return 1;
}

/* enum json_type's names in a message, in its order (JSON_TRUE stands for a boolean) */
static const char *const api_type_names[] = { "null",     "a boolean", "a boolean", "a number",
                                              "a string", "an array",  "an object" };

int api_body(struct api_ctx *ctx, const struct api_field *fields, size_t nfields)
{
    struct al_error err;
    const char *text = ctx->body ? ctx->body : ctx->req->body;
    size_t len = ctx->body ? ctx->body_len : ctx->req->body_len;
    for (size_t i = 0; i < nfields; i++) {
        *fields[i].ret = NULL;
    }
    if (len == 0) {
        text = "{}";
        len = 2;
    }
    memset(&err, 0, sizeof err);
    enum al_code code = json_parse(text, len, API_DEPTH_MAX, &ctx->doc, &err);
    if (code == AL_INTERNAL_ERROR) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (code != AL_OK) {
        api_error(ctx, 400, "INVALID_REQUEST", "the body is not valid JSON: %s", err.message);
        return -1;
    }
    const struct json_node *root = json_root(ctx->doc);
    if (root->type != JSON_OBJECT) {
        api_error(ctx, 400, "INVALID_REQUEST", "the body must be a JSON object");
        return -1;
    }
    /* I-JSON only (RFC 7493): what is stored is also hashed into the audit log, whose canonical
     * form has no lone surrogate, no infinity and no second member of one name. */
    char where[128];
    const char *why = "";
    int bad = json_ijson_check(root, where, sizeof where, &why);
    if (bad != 0) {
        bad < 0 ? api_error(ctx, 500, "INTERNAL", "out of memory")
                : api_error(ctx, 400, "INVALID_REQUEST", "the body is not I-JSON at %s: %s", where,
                            why);
        return -1;
    }
    for (const struct json_node *m = root->child; m; m = m->next) {
        const struct api_field *f = NULL;
        for (size_t i = 0; i < nfields; i++) {
            if (strlen(fields[i].name) == m->key_len && strcmp(fields[i].name, m->key) == 0) {
                f = &fields[i];
            }
        }
        if (!f) {
            api_error(ctx, 400, "INVALID_REQUEST", "unknown field \"%.64s\"", m->key);
            return -1;
        }
        int bool_ok = f->type == JSON_TRUE && (m->type == JSON_TRUE || m->type == JSON_FALSE);
        if (f->type != API_FIELD_ANY && !bool_ok && m->type != f->type) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"%s\" must be %s", f->name,
                      api_type_names[f->type]);
            return -1;
        }
        if (m->type == JSON_STRING && strlen(m->str) != m->str_len) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"%s\" holds a NUL character", f->name);
            return -1;
        }
        *f->ret = m;
    }
    for (size_t i = 0; i < nfields; i++) {
        if (fields[i].required && !*fields[i].ret) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"%s\" is required", fields[i].name);
            return -1;
        }
    }
    return 0;
}

enum store_rc api_audit(struct api_ctx *ctx, const char *action, const char *subject,
                        const char *department, const char *details_json)
{
    /* a session's change names the identity the provider vouched for (docs/sso.md) */
    if (ctx->who && ctx->who->session && details_json && details_json[0] == '{') {
        struct buf d;
        buf_init(&d, strlen(details_json) + 2 * sizeof ctx->who->identity + 32);
        buf_append_str(&d, "{\"session_identity\":");
        json_write_string(&d, ctx->who->identity, strlen(ctx->who->identity));
        buf_append_str(&d, details_json[1] == '}' ? "" : ",");
        buf_append_str(&d, details_json + 1);
        enum store_rc rc =
                d.data ? ctx->store->ops->audit_append(ctx->store, ctx->who->name, action, subject,
                                                       department, d.data, NULL)
                       : STORE_ERROR;
        buf_done(&d);
        return rc;
    }
    return ctx->store->ops->audit_append(ctx->store, ctx->who ? ctx->who->name : "airlockd", action,
                                         subject, department, details_json, NULL);
}

enum store_rc api_tx_end(struct store *s, enum store_rc rc)
{
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK) {
        s->ops->tx_rollback(s);
    }
    return rc;
}

/* A refusal's record, a job of the writer's when the refusal is made off it. */
struct api_denial {
    struct writer_job job;
    char actor[STORE_NAME_MAX + 1];
    unsigned status;
    char why[AUTH_WHY_MAX + 512];
    struct buf details;
    struct http_deferred *deferred; /* NULL: a harness waits in writer_call */
    struct http_response *resp;     /* the harness's answer */
    const struct http_request *req;
};

static enum store_rc api_denial_fn(struct writer_tx *tx, void *arg)
{
    struct api_denial *d = arg;
    struct store *s = writer_store(tx);
    if (buf_failed(&d->details)) {
        return STORE_ERROR;
    }
    return s->ops->audit_append(s, d->actor, "auth.denied", d->status == 401 ? NULL : d->actor,
                                NULL, d->details.data, NULL);
}

/* The refusal's answer into resp, once its record is in (or could not be made: 500); frees d. */
static void api_denial_answer(struct api_denial *d, struct http_response *resp, enum store_rc rc)
{
    if (rc != STORE_OK) {
        api_error_resp(d->req, resp, 500, "INTERNAL", "the audit log could not record a refusal");
    } else if (d->status == 401) {
        api_error_resp(d->req, resp, 401, "UNAUTHENTICATED", d->why);
    } else {
        api_error_resp(d->req, resp, 403, "FORBIDDEN", d->why);
    }
    buf_done(&d->details);
    free(d);
}

static void api_denial_done(void *arg, enum store_rc rc)
{
    struct api_denial *d = arg;
    struct http_deferred *deferred = d->deferred;
    if (deferred) {
        struct http_response resp;
        http_response_init(&resp);
        api_denial_answer(d, &resp, rc);
        http_deferred_reply(deferred, &resp);
        http_response_done(&resp);
    } else if (!d->req) {
        /* a tally's summary (api_denials_write): nobody to answer, so the log says it was lost */
        if (rc != STORE_OK) {
            fprintf(stderr,
                    "{\"log\":\"audit\",\"error\":\"a tally of refusals could not be "
                    "recorded\",\"details\":%s}\n",
                    d->details.data ? d->details.data : "null");
        }
        buf_done(&d->details);
        free(d);
    }
}

/* Appends s[0..len) as a JSON string made well-formed: the audit record must be valid UTF-8. */
static void api_valid_str(struct buf *b, const char *s, size_t len)
{
    size_t valid_len = 0;
    char *valid = utf8_valid_dup(s, len, 0, &valid_len);
    json_write_string(b, valid ? valid : "", valid ? valid_len : 0);
    free(valid);
}

/* The details of a refusal's record: the request's fields, and for a tally of 401s (rec not
 * NULL) the address, the count, the first and last time and the distinct reasons. */
static void api_denial_details(struct buf *b, const char *method, const char *route,
                               const char *path, unsigned status, const char *why,
                               const char *request_id, const struct denials_record *rec)
{
    api_member(b, "{\"method\":", method);
    api_member(b, ",\"route\":", route);
    /* the path as the client sent it; the reason, which may quote the path's department */
    buf_append_str(b, ",\"path\":");
    api_valid_str(b, path, strnlen(path, DENIALS_PATH_MAX));
    buf_printf(b, ",\"status\":%u,\"reason\":", status);
    api_valid_str(b, why, strlen(why));
    buf_printf(b, ",\"request_id\":\"%s\"", request_id);
    if (rec) {
        char first[RUNS_TIME_LEN];
        char last[RUNS_TIME_LEN];
        runs_time_text(rec->first_ms, first);
        runs_time_text(rec->last_ms, last);
        api_member(b, ",\"address\":", rec->address);
        buf_printf(b, ",\"count\":%llu,\"first\":\"%s\",\"last\":\"%s\",\"reasons\":[",
                   (unsigned long long)rec->count, first, last);
        for (size_t i = 0; i < rec->nreasons; i++) {
            buf_append_str(b, i ? "," : "");
            api_valid_str(b, rec->reasons[i], strlen(rec->reasons[i]));
        }
        buf_append_str(b, "]");
    }
    buf_append_str(b, "}");
}

/* A new refusal record for the writer, its details to be filled; NULL when out of memory. */
static struct api_denial *api_denial_new(const char *actor, unsigned status, const char *why)
{
    struct api_denial *d = calloc(1, sizeof *d);
    if (d) {
        snprintf(d->actor, sizeof d->actor, "%s", actor);
        d->status = status;
        snprintf(d->why, sizeof d->why, "%s", why);
        buf_init(&d->details, 16 * 1024); /* room for 512 bytes of path escaped six times over */
    }
    return d;
}

void api_denials_write(const struct denials_record *rec, void *writer)
{
    struct api_denial *d = api_denial_new(AUDIT_SERVER_ACTOR, 401, rec->reasons[0]);
    if (!d) {
        return;
    }
    api_denial_details(&d->details, rec->method, rec->route, rec->path, 401, rec->reasons[0],
                       rec->request_id, rec);
    d->job.fn = api_denial_fn;
    d->job.done = api_denial_done;
    d->job.arg = d;
    writer_submit(writer, &d->job); /* no request waits for it: its done frees it */
}

void api_denied(struct api_ctx *ctx, unsigned status, const char *why)
{
    const struct http_request *req = ctx->req;
    const char *method = ctx->method ? ctx->method : req->method;
    const char *route = ctx->route ? ctx->route : "";
    struct denials_record tally;
    const struct denials_record *rec = NULL;
    if (status == 401 && !ctx->tx && ctx->svc && ctx->svc->denials) {
        /* a request without a valid key: one record per address per interval, the refusals
         * between two folded into the next one's count */
        struct denials_refusal r = { req->client, method, route, req->path, why, req->request_id };
        if (denials_note(ctx->svc->denials, &r, &tally) == 0) {
            api_error_resp(req, ctx->resp, 401, "UNAUTHENTICATED", why);
            return;
        }
        rec = &tally;
    }
    struct api_denial *d = api_denial_new(
            status == 401 || !ctx->who ? AUDIT_SERVER_ACTOR : ctx->who->name, status, why);
    if (!d) {
        api_error_resp(req, ctx->resp, 500, "INTERNAL", "the audit log could not record a refusal");
        return;
    }
    d->req = req;
    api_denial_details(&d->details, method, route, req->path, status, why, req->request_id, rec);
    if (status == 403 && ctx->who && ctx->who->session && d->details.len > 0) {
        /* a session's refusal names the identity behind it, as its changes do (docs/sso.md) */
        d->details.len--; /* the closing brace */
        buf_append_str(&d->details, ",\"session_identity\":");
        api_valid_str(&d->details, ctx->who->identity, strlen(ctx->who->identity));
        buf_append_str(&d->details, "}");
    }
    if (ctx->tx) {
        /* on the writer already: in the batch, answered with it */
        api_denial_answer(d, ctx->resp, api_denial_fn(ctx->tx, d));
        return;
    }
    d->job.fn = api_denial_fn;
    d->job.done = api_denial_done;
    d->job.arg = d;
    d->deferred = ctx->svc && ctx->svc->writer ? http_defer(req, ctx->resp) : NULL;
    if (d->deferred) {
        writer_submit(ctx->svc->writer, &d->job);
        return;
    }
    /* no connection to suspend (a harness): wait for the commit here */
    api_denial_answer(d, ctx->resp,
                      ctx->svc && ctx->svc->writer ? writer_call(ctx->svc->writer, api_denial_fn, d)
                                                   : STORE_ERROR);
}

/* api_after_commit's hook, with the caller's function. */
struct api_after {
    struct writer_hook hook;
    void (*fn)(void *arg, int committed);
    void *arg;
};

static void api_after_fire(void *arg, enum store_rc rc)
{
    struct api_after *a = arg;
    a->fn(a->arg, rc == STORE_OK);
    free(a);
}

void api_after_commit(struct writer_tx *tx, void (*fn)(void *arg, int committed), void *arg)
{
    struct api_after *a = tx ? calloc(1, sizeof *a) : NULL;
    if (!a) {
        /* no transaction (or no memory to wait with): now, as committed */
        fn(arg, 1);
        return;
    }
    a->fn = fn;
    a->arg = arg;
    writer_after(tx, &a->hook, api_after_fire, a);
}

int api_decision(struct api_ctx *ctx, const struct gov_decision *d)
{
    if (d->reason == GOV_ALLOWED) {
        return 0;
    }
    if (d->reason == GOV_NO_ROLE) {
        api_denied(ctx, 403, d->why);
    } else {
        api_error(ctx, d->status, d->code, "%s", d->why);
    }
    return -1;
}

enum gov_version_state api_version_state(const char *name)
{
    enum gov_version_state state = (enum gov_version_state)GOV_VERSION_STATES;
    (void)gov_version_state_parse(name, &state);
    return state;
}

enum gov_run_state api_run_state(const char *name)
{
    enum gov_run_state state = (enum gov_run_state)GOV_RUN_STATES;
    (void)gov_run_state_parse(name, &state);
    return state;
}

enum gov_approval_state api_approval_state(const char *name)
{
    enum gov_approval_state state = (enum gov_approval_state)GOV_APPROVAL_STATES;
    (void)gov_approval_state_parse(name, &state);
    return state;
}

int api_allow(struct api_ctx *ctx, const char *department)
{
    char why[AUTH_WHY_MAX] = "";
    struct auth_rule rule = ctx->rule;
    if (!ctx->who) {
        api_denied(ctx, 401, "no principal");
        return -1;
    }
    if (rule.scope != AUTH_RESOURCE) {
        rule.scope = AUTH_DEPARTMENT;
    }
    if (auth_check(ctx->who, &rule, department, why) == AUTH_OK) {
        return 0;
    }
    api_denied(ctx, 403, why);
    return -1;
}
