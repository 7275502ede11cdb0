/*
 * api_approvals.c - the decisions people make on runs: a supervised run's start (kind "run") and
 * each sensitive call (kind "host_call"). An approval is decided once (the store refuses a second
 * decision), never by the principal that started the run (four eyes), and its decision and
 * audit record commit together. When the last pending approval of a run is decided, the run's
 * continuation is claimed in the same transaction and the run resumes with every decision as
 * its resolutions; a supervised run starts when approved and ends "denied" when denied.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_runs.h"
#include "runs.h"

#define API_APPROVALS_MAX 256 /* decisions that resume one run at once */

static void api_approval_json(struct buf *b, const struct store_approval *a)
{
    buf_append_str(b, "{\"id\":");
    api_str(b, a->id);
    buf_append_str(b, ",\"kind\":");
    api_str(b, a->kind);
    buf_append_str(b, ",\"status\":");
    api_str(b, a->status);
    buf_append_str(b, ",\"run\":");
    api_str(b, a->run);
    if (a->template_name[0]) {
        buf_append_str(b, ",\"template\":");
        api_str(b, a->template_name);
        buf_printf(b, ",\"version\":%" PRId64, a->version);
    } else {
        buf_append_str(b, ",\"template\":null,\"version\":null");
    }
    buf_append_str(b, ",\"department\":");
    api_str(b, a->department);
    buf_append_str(b, ",\"function\":");
    if (a->function) {
        api_str(b, a->function);
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, ",\"args\":");
    if (a->args) {
        json_write_compact(b, a->args, strlen(a->args));
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, ",\"requested_by\":");
    api_str(b, a->requested_by);
    buf_append_str(b, ",\"created\":");
    api_str(b, a->created);
    buf_append_str(b, ",\"decided_by\":");
    if (a->decided_by) {
        api_str(b, a->decided_by);
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, ",\"decided\":");
    if (a->decided) {
        api_str(b, a->decided);
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, ",\"comment\":");
    if (a->comment) {
        api_str(b, a->comment);
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, "}");
}

static int api_approval_one(void *userdata, const struct store_approval *a)
{
    api_approval_json(userdata, a);
    return 0;
}

/* The caller holds one of `roles` in the department (or for "*"). */
static int api_holds(const struct auth_principal *who, unsigned roles, const char *department)
{
    for (size_t i = 0; i < who->ngrants; i++) {
        if ((who->grants[i].role & roles) && (strcmp(who->grants[i].department, "*") == 0 ||
                                              strcmp(who->grants[i].department, department) == 0)) {
            return 1;
        }
    }
    return 0;
}

struct api_approval_list {
    struct api_ctx *ctx;
    struct buf *b;
    int n;
};

static int api_approval_item(void *userdata, const struct store_approval *a)
{
    struct api_approval_list *l = userdata;
    if (!api_holds(l->ctx->who, l->ctx->rule.roles, a->department)) {
        return 0;
    }
    buf_append_str(l->b, l->n++ ? "," : "");
    api_approval_json(l->b, a);
    return 0;
}

void api_approvals_list(struct api_ctx *ctx)
{
    struct api_approval_list l = { ctx, &ctx->resp->body, 0 };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    const char *status = http_query(ctx->req, "status");
    if (status && strcmp(status, "pending") != 0 && strcmp(status, "approved") != 0 &&
        strcmp(status, "denied") != 0 && strcmp(status, "cancelled") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "status must be pending, approved, denied or cancelled");
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (ctx->store->ops->approval_list(ctx->store, NULL, status, api_approval_item, &l) !=
        STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

struct api_approval_copy {
    char id[RUNS_ID_LEN + 1];
    char run[RUNS_ID_LEN + 1];
    char kind[16];
    char status[16];
    char department[STORE_NAME_MAX + 1];
    char requested_by[STORE_NAME_MAX + 1];
};

static int api_approval_copy_fn(void *userdata, const struct store_approval *a)
{
    struct api_approval_copy *c = userdata;
    snprintf(c->id, sizeof c->id, "%s", a->id);
    snprintf(c->run, sizeof c->run, "%s", a->run);
    snprintf(c->kind, sizeof c->kind, "%s", a->kind);
    snprintf(c->status, sizeof c->status, "%s", a->status);
    snprintf(c->department, sizeof c->department, "%s", a->department);
    snprintf(c->requested_by, sizeof c->requested_by, "%s", a->requested_by);
    return 0;
}

/* The decisions a resume hands to the run: every decided, not yet consumed approval. */
struct api_decisions {
    size_t n;
    int pending;
    struct runs_resolution res[API_APPROVALS_MAX];
    char *strings[2 * API_APPROVALS_MAX];
    size_t nstrings;
};

static int api_decision_fn(void *userdata, const struct store_approval *a)
{
    struct api_decisions *d = userdata;
    if (strcmp(a->status, "pending") == 0) {
        d->pending++;
        return 0;
    }
    if (a->consumed || strcmp(a->kind, "host_call") != 0 || !a->interruption ||
        strcmp(a->status, "cancelled") == 0 || d->n == API_APPROVALS_MAX) {
        return 0;
    }
    struct runs_resolution *r = &d->res[d->n++];
    char *id = strdup(a->interruption);
    char *comment = a->comment ? strdup(a->comment) : NULL;
    d->strings[d->nstrings++] = id;
    d->strings[d->nstrings++] = comment;
    r->interruption = id ? id : "";
    r->approved = strcmp(a->status, "approved") == 0;
    r->comment = comment;
    return 0;
}

static void api_decisions_done(struct api_decisions *d)
{
    for (size_t i = 0; i < d->nstrings; i++) {
        free(d->strings[i]);
    }
}

struct api_row_copy {
    struct store_run row;
    char *strings[8];
};

static char *api_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int api_row_copy_fn(void *userdata, const struct store_run *row)
{
    struct api_row_copy *c = userdata;
    c->row = *row;
    c->strings[0] = api_dup(row->id);
    c->strings[1] = api_dup(row->template_name);
    c->strings[2] = api_dup(row->department);
    c->strings[3] = api_dup(row->principal);
    c->strings[4] = api_dup(row->input);
    c->strings[5] = api_dup(row->source);
    c->strings[6] = api_dup(row->language);
    c->strings[7] = api_dup(row->functions);
    c->row.id = c->strings[0];
    c->row.template_name = c->strings[1];
    c->row.department = c->strings[2];
    c->row.principal = c->strings[3];
    c->row.input = c->strings[4];
    c->row.source = c->strings[5];
    c->row.language = c->strings[6];
    c->row.functions = c->strings[7];
    c->row.status = NULL;
    c->row.outcome = NULL;
    return 0;
}

static void api_row_copy_done(struct api_row_copy *c)
{
    for (size_t i = 0; i < 8; i++) {
        free(c->strings[i]);
    }
}

static void api_approvals_decide(struct api_ctx *ctx, int approve)
{
    struct store *s = ctx->store;
    const char *id = api_param(ctx, "id");
    const struct json_node *comment_node = NULL;
    const struct api_field fields[] = { { "comment", JSON_STRING, 0, &comment_node } };
    struct api_approval_copy a;
    struct api_decisions decisions;
    struct api_row_copy run;
    struct runs_plan *plan = NULL;
    char *token = NULL;
    char err[256] = "";
    int launch = 0;
    struct buf d;
    memset(&a, 0, sizeof a);
    memset(&decisions, 0, sizeof decisions);
    memset(&run, 0, sizeof run);
    buf_init(&d, 64 * 1024);
    if (api_body(ctx, fields, 1) != 0) {
        goto out;
    }
    if (!ctx->svc || !ctx->svc->runs) {
        api_error(ctx, 500, "INTERNAL", "this airlockd executes no runs");
        goto out;
    }
    const char *comment = comment_node ? comment_node->str : "";
    if (strlen(comment) > 4096) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"comment\" is over 4096 bytes");
        goto out;
    }
    enum store_rc rc = s->ops->approval_get(s, id, api_approval_copy_fn, &a);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no approval %s", id);
        goto out;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    if (api_allow(ctx, a.department) != 0) {
        goto out;
    }
    if (strcmp(a.requested_by, ctx->who->name) == 0) {
        api_error(ctx, 409, "CONFLICT",
                  "four eyes: %s started run %s and cannot decide its approval", ctx->who->name,
                  a.run);
        goto out;
    }
    if (strcmp(a.status, "pending") != 0) {
        api_error(ctx, 409, "CONFLICT", "approval %s is %s already", id, a.status);
        goto out;
    }
    const char *status = approve ? "approved" : "denied";
    rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->approval_decide(s, id, status, ctx->who->name, comment);
    }
    if (rc == STORE_OK) {
        buf_append_str(&d, "{\"approval\":");
        api_str(&d, id);
        buf_append_str(&d, ",\"run\":");
        api_str(&d, a.run);
        buf_append_str(&d, ",\"kind\":");
        api_str(&d, a.kind);
        buf_append_str(&d, ",\"decision\":");
        api_str(&d, status);
        buf_append_str(&d, ",\"comment\":");
        api_str(&d, comment);
        buf_append_str(&d, "}");
        rc = d.data ? api_audit(ctx, approve ? "approval.approve" : "approval.deny", id,
                                a.department, d.data)
                    : STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_get(s, a.run, api_row_copy_fn, &run);
    }
    if (rc == STORE_OK && strcmp(a.kind, "run") == 0) {
        if (approve) {
            rc = s->ops->run_set_status(s, a.run, "awaiting_approval", "running", NULL);
            launch = rc == STORE_OK;
        } else {
            struct buf o;
            buf_init(&o, 64 * 1024);
            buf_append_str(&o, "{\"error\":{\"code\":\"DENIED\",\"name\":\"\",\"message\":");
            char message[4200];
            snprintf(message, sizeof message, comment[0] ? "denied: %s" : "denied", comment);
            api_str(&o, message);
            buf_append_str(&o, ",\"stack\":\"\"},\"console\":[],\"stats\":{}}");
            rc = o.data ? s->ops->run_set_status(s, a.run, "awaiting_approval", "denied", o.data)
                        : STORE_ERROR;
            buf_done(&o);
        }
    } else if (rc == STORE_OK) {
        rc = s->ops->approval_list(s, a.run, NULL, api_decision_fn, &decisions);
        if (rc == STORE_OK && decisions.pending == 0) {
            rc = s->ops->run_take_continuation(s, a.run, &token);
            if (rc == STORE_OK) {
                rc = s->ops->approval_consume(s, a.run);
            }
            if (rc == STORE_OK) {
                rc = s->ops->run_set_status(s, a.run, "awaiting_approval", "running", NULL);
            }
            launch = rc == STORE_OK;
        }
    }
    if (rc == STORE_OK && launch) {
        rc = api_run_plan(s, ctx->secret_key, &run.row, &plan, err);
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK) {
        s->ops->tx_rollback(s);
        if (rc == STORE_CONFLICT && err[0]) {
            api_error(ctx, 409, "CONFLICT", "the run cannot resume: %s", err);
        } else if (rc == STORE_CONFLICT || rc == STORE_NOT_FOUND) {
            api_error(ctx, 409, "CONFLICT", "approval %s was decided meanwhile", id);
        } else {
            api_store_failed(ctx);
        }
        goto out;
    }
    if (launch) {
        struct runs_plan *p = plan;
        plan = NULL;
        runs_launch(ctx->svc->runs, p, token, decisions.res, decisions.n, NULL);
    }
    api_reply(ctx, 200);
    if (s->ops->approval_get(s, id, api_approval_one, &ctx->resp->body) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    buf_append_str(&ctx->resp->body, "\n");
out:
    runs_plan_free(plan);
    free(token);
    api_decisions_done(&decisions);
    api_row_copy_done(&run);
    buf_done(&d);
}

void api_approvals_approve(struct api_ctx *ctx)
{
    api_approvals_decide(ctx, 1);
}

void api_approvals_deny(struct api_ctx *ctx)
{
    api_approvals_decide(ctx, 0);
}
