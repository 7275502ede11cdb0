/*
 * api_departments.c - departments and their policy (admin). A new department starts
 * {"autonomy":"autonomous","allow_adhoc":false}; every change and its audit record are one
 * transaction, so the log never misses a change nor records one that did not happen. A renamed
 * department takes everything that names it along (store.h department_rename) but the audit
 * log, which keeps what was true when it was written; it is not renamed under a run executing
 * (which holds its name) nor while the config's oidc.group_roles names it. A department is deleted
 * only when empty: no template, connector, mount, role grant, run (in any state) or snapshot names
 * it, so a department made later under its name inherits nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_runs.h"
#include "oidc.h"

struct api_list {
    struct buf *b;
    int n;
};

static int api_department_item(void *userdata, const struct store_department *d)
{
    struct api_list *l = userdata;
    api_member(l->b, l->n++ ? ",{\"name\":" : "{\"name\":", d->name);
    api_member(l->b, ",\"autonomy\":", d->autonomy);
    buf_printf(l->b, ",\"allow_adhoc\":%s,\"approval_ttl_ms\":%" PRId64 ",\"created\":",
               d->allow_adhoc ? "true" : "false", d->approval_ttl_ms);
    api_str(l->b, d->created);
    buf_append_str(l->b, "}");
    return 0;
}

/* Answers status with department `name` as stored after a change. */
static void api_department_reply(struct api_ctx *ctx, unsigned status, const char *name)
{
    struct api_list one = { &ctx->resp->body, 0 };
    api_reply(ctx, status);
    if (ctx->store->ops->department_get(ctx->store, name, api_department_item, &one) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(&ctx->resp->body, "\n");
}

void api_departments_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const struct json_node *name = NULL;
    const struct api_field fields[] = { { "name", JSON_STRING, 1, &name } };
    char details[STORE_NAME_MAX + 64];
    if (api_body(ctx, fields, 1) != 0) {
        return;
    }
    if (!api_name_ok(name->str) || strcmp(name->str, "*") == 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z0-9][a-z0-9._-]{0,63}");
        return;
    }
    /* a valid name needs no escaping */
    snprintf(details, sizeof details,
             "{\"name\":\"%s\",\"autonomy\":\"autonomous\",\"allow_adhoc\":false}", name->str);
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    enum store_rc rc = s->ops->department_create(s, name->str);
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "department.create", name->str, name->str, details);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "department %s exists", name->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_department_reply(ctx, 201, name->str);
    }
}

void api_departments_list(struct api_ctx *ctx)
{
    struct api_list l = { &ctx->resp->body, 0 };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (ctx->store->ops->department_list(ctx->store, api_department_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

struct api_policy {
    char autonomy[16];
    int allow_adhoc;
    int64_t approval_ttl_ms;
};

static int api_policy_read(void *userdata, const struct store_department *d)
{
    struct api_policy *p = userdata;
    snprintf(p->autonomy, sizeof p->autonomy, "%s", d->autonomy);
    p->allow_adhoc = d->allow_adhoc;
    p->approval_ttl_ms = d->approval_ttl_ms;
    return 0;
}

void api_departments_policy(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *dept = api_param(ctx, "d");
    const struct json_node *autonomy = NULL;
    const struct json_node *adhoc = NULL;
    const struct json_node *ttl = NULL;
    const struct api_field fields[] = { { "autonomy", JSON_STRING, 0, &autonomy },
                                        { "allow_adhoc", JSON_TRUE, 0, &adhoc },
                                        { "approval_ttl_ms", JSON_NUMBER, 0, &ttl } };
    struct api_policy policy;
    struct buf details;
    buf_init(&details, 4096);
    if (api_body(ctx, fields, 3) != 0) {
        goto out;
    }
    /* a waiting run's continuation is signed for a year: a run cannot wait longer */
    if (ttl &&
        (ttl->num < 1000 || ttl->num > API_APPROVAL_TTL_MAX_MS || ttl->num != (int64_t)ttl->num)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"approval_ttl_ms\" must be an integer from 1000 to %" PRId64,
                  (int64_t)API_APPROVAL_TTL_MAX_MS);
        goto out;
    }
    if (autonomy && strcmp(autonomy->str, "autonomous") != 0 &&
        strcmp(autonomy->str, "supervised") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"autonomy\" must be \"autonomous\" or \"supervised\"");
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->department_get(s, dept, api_policy_read, &policy);
    if (rc == STORE_OK) {
        if (autonomy) {
            snprintf(policy.autonomy, sizeof policy.autonomy, "%s", autonomy->str);
        }
        if (adhoc) {
            policy.allow_adhoc = adhoc->type == JSON_TRUE;
        }
        if (ttl) {
            policy.approval_ttl_ms = (int64_t)ttl->num;
        }
        api_member(&details, "{\"autonomy\":", policy.autonomy);
        buf_printf(&details, ",\"allow_adhoc\":%s,\"approval_ttl_ms\":%" PRId64 "}",
                   policy.allow_adhoc ? "true" : "false", policy.approval_ttl_ms);
        rc = s->ops->department_set_policy(s, dept, policy.autonomy, policy.allow_adhoc);
    }
    if (rc == STORE_OK && ttl) {
        rc = s->ops->department_set_approval_ttl(s, dept, policy.approval_ttl_ms);
    }
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "department.policy", dept, dept, details.data);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no department %s", dept);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_department_reply(ctx, 200, dept);
    }
out:
    buf_done(&details);
}

/* 1 when the config's oidc.group_roles grants a role in `department` (docs/sso.md): the grant
 * names it and changes only with the config file, so under another name it would grant nothing
 * the department holds, and the same role in whatever department is made later under this one. */
static int api_dept_in_group_roles(const struct api_ctx *ctx, const char *department)
{
    const struct oidc_config *cfg = ctx->svc && ctx->svc->oidc ? ctx->svc->oidc->cfg : NULL;
    for (size_t i = 0; cfg && i < cfg->ngroup_roles; i++) {
        if (strcmp(cfg->group_roles[i].department, department) == 0) {
            return 1;
        }
    }
    return 0;
}

/* One department's runs among those run_list sees, counted. */
struct api_dept_runs {
    const char *department;
    int64_t n;
};

static int api_dept_run_count(void *userdata, const struct store_run *r)
{
    struct api_dept_runs *c = userdata;
    c->n += strcmp(r->department, c->department) == 0;
    return 0;
}

/* The runs of `department` queued or executing: each holds the department's name from its start
 * and names it in what it writes later (an approval it asks for, its failure's webhook), so a
 * department is renamed between its runs, never under one. A run waiting for a person is stored
 * whole, and the rename takes it along. */
static enum store_rc api_dept_runs_executing(struct store *s, const char *department, int64_t *ret)
{
    static const char *const executing[] = { "queued", "running" };
    struct api_dept_runs c = { department, 0 };
    enum store_rc rc = STORE_OK;
    for (size_t i = 0; i < sizeof executing / sizeof executing[0] && rc == STORE_OK; i++) {
        struct store_run_filter f = { .status = executing[i] };
        rc = s->ops->run_list(s, &f, api_dept_run_count, &c);
    }
    *ret = c.n;
    return rc;
}

void api_departments_patch(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *dept = api_param(ctx, "d");
    const struct json_node *name = NULL;
    const struct api_field fields[] = { { "name", JSON_STRING, 1, &name } };
    char details[2 * STORE_NAME_MAX + 64];
    if (api_body(ctx, fields, 1) != 0) {
        return;
    }
    if (!api_name_ok(name->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z0-9][a-z0-9._-]{0,63}");
        return;
    }
    if (api_dept_in_group_roles(ctx, dept)) {
        api_error(ctx, 409, "CONFLICT",
                  "department %s is named by oidc.group_roles in the config file: name %s there "
                  "first",
                  dept, name->str);
        return;
    }
    /* valid names need no escaping */
    snprintf(details, sizeof details, "{\"from\":\"%s\",\"to\":\"%s\"}", dept, name->str);
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    int64_t executing = 0;
    enum store_rc rc = api_dept_runs_executing(s, dept, &executing);
    if (rc == STORE_OK && executing > 0) {
        s->ops->tx_rollback(s);
        api_error(ctx, 409, "CONFLICT",
                  "department %s has %lld run(s) queued or running: rename it once they have "
                  "ended or wait for a person",
                  dept, (long long)executing);
        return;
    }
    if (rc == STORE_OK) {
        rc = s->ops->department_rename(s, dept, name->str);
    }
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "department.rename", name->str, name->str, details);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no department %s", dept);
    } else if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "department %s exists", name->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_department_reply(ctx, 200, name->str);
    }
}

/* "N things" for a count that is not 0, after a comma when one was written before. */
static void api_usage_part(struct buf *b, int64_t n, const char *one, const char *many)
{
    if (n > 0) {
        buf_printf(b, "%s%lld %s", b->len ? ", " : "", (long long)n, n == 1 ? one : many);
    }
}

void api_departments_delete(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *dept = api_param(ctx, "d");
    struct store_department_usage u;
    struct buf what;
    char details[STORE_NAME_MAX + 32];
    buf_init(&what, 1024);
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    if (api_dept_in_group_roles(ctx, dept)) {
        api_error(ctx, 409, "CONFLICT",
                  "department %s is not empty: oidc.group_roles in the config file grants roles "
                  "in it",
                  dept);
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->department_usage(s, dept, &u);
    if (rc == STORE_OK) {
        api_usage_part(&what, u.templates, "template", "templates");
        api_usage_part(&what, u.connectors, "connector", "connectors");
        api_usage_part(&what, u.mounts, "mount", "mounts");
        api_usage_part(&what, u.grants, "role grant", "role grants");
        api_usage_part(&what, u.runs, "run", "runs");
        api_usage_part(&what, u.snapshots, "snapshot", "snapshots");
        api_usage_part(&what, u.webhooks, "webhook", "webhooks");
    }
    if (rc == STORE_OK && what.len > 0) {
        /* what names it would name nothing, or a department of that name made later */
        s->ops->tx_rollback(s);
        api_error(ctx, 409, "CONFLICT", "department %s is not empty: it has %s", dept, what.data);
        goto out;
    }
    if (rc == STORE_OK) {
        rc = s->ops->department_delete(s, dept);
    }
    if (rc == STORE_OK) {
        snprintf(details, sizeof details, "{\"name\":\"%s\"}", dept);
        rc = api_audit(ctx, "department.delete", dept, dept, details);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no department %s", dept);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"name\":", dept);
        buf_append_str(&ctx->resp->body, ",\"deleted\":true}\n");
    }
out:
    buf_done(&what);
}
