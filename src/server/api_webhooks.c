/*
 * api_webhooks.c - registering webhooks (admin), listing and deleting them (docs/webhooks.md).
 * A webhook of a department is an admin's of that department; one of "*" (every department's
 * events, and those of no department such as audit.truncated) an admin's of "*". Its URL is
 * checked as a connector's: the only places airlockd sends to are the ones admins registered.
 * The signing secret is sealed (secretbox.h) before it reaches the store, bound to the
 * webhook's id, and never written to an answer, a log line or the audit log; the audit names
 * the URL's scheme and host only, as a URL's path may be a credential (Slack's are). The change
 * and its audit record are one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "runs.h"
#include "secretbox.h"
#include "webhooks.h"

#define API_WEBHOOK_URL_MAX    2048
#define API_WEBHOOK_SECRET_MIN 16
#define API_WEBHOOK_SECRET_MAX 1024

static void api_webhook_json(struct buf *b, const struct store_webhook *w)
{
    api_member(b, "{\"id\":", w->id);
    api_member(b, ",\"url\":", w->url);
    buf_printf(b, ",\"events\":%s", w->events); /* stored compact by this file: valid JSON */
    api_member(b, ",\"department\":", w->department);
    api_member(b, ",\"format\":", w->format);
    api_member(b, ",\"created\":", w->created);
    api_member(b, ",\"created_by\":", w->created_by);
    buf_append_str(b, "}");
}

/* The events array: each a known type, none twice, at least one; its compact form in out. 0, or
 * -1 after answering 400. */
static int api_webhook_events(struct api_ctx *ctx, const struct json_node *events, struct buf *out)
{
    int seen[16] = { 0 };
    buf_append_str(out, "[");
    for (const struct json_node *e = events->child; e; e = e->next) {
        size_t i = 0;
        while (e->type == JSON_STRING && i < webhooks_types_count &&
               !(strlen(webhooks_types[i]) == e->str_len &&
                 memcmp(webhooks_types[i], e->str, e->str_len) == 0)) {
            i++;
        }
        if (e->type != JSON_STRING || i == webhooks_types_count || seen[i]) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "field \"events\" must list event types, each once: approval.requested, "
                      "approval.decided, version.submitted, version.approved, run.failed, "
                      "audit.truncated");
            return -1;
        }
        buf_printf(out, "%s\"%s\"", out->len > 1 ? "," : "", webhooks_types[i]);
        seen[i] = 1;
    }
    buf_append_str(out, "]");
    if (out->len <= 2) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"events\" must name at least one event");
        return -1;
    }
    return 0;
}

static int api_webhook_department_seen(void *userdata, const struct store_department *d)
{
    (void)d;
    *(int *)userdata = 1;
    return 0;
}

struct api_webhook_list {
    struct api_ctx *ctx;
    struct buf *b;
    int n;
    const char *id; /* the one looked for, or NULL */
    char department[STORE_NAME_MAX + 1];
    int found;
};

/* Renders webhook l->id alone. */
static int api_webhook_one(void *userdata, const struct store_webhook *w)
{
    struct api_webhook_list *l = userdata;
    if (strcmp(w->id, l->id) != 0) {
        return 0;
    }
    l->found = 1;
    api_webhook_json(l->b, w);
    return 1;
}

void api_webhooks_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const struct json_node *url = NULL;
    const struct json_node *events = NULL;
    const struct json_node *department = NULL;
    const struct json_node *format = NULL;
    const struct json_node *secret = NULL;
    const struct api_field fields[] = {
        { "url", JSON_STRING, 1, &url },
        { "events", JSON_ARRAY, 1, &events },
        { "department", JSON_STRING, 1, &department },
        { "format", JSON_STRING, 0, &format },
        { "signing_secret", JSON_STRING, 1, &secret },
    };
    char id[RUNS_ID_LEN + 1];
    char context[STORE_NAME_MAX + 64];
    char *sealed = NULL;
    struct buf types;
    struct buf details;
    buf_init(&types, 1024);
    buf_init(&details, 8192);
    if (api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        goto out;
    }
    if (!api_url_ok(url->str, url->str_len)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"url\" must be an http:// or https:// URL with a host, without "
                  "userinfo or spaces, at most %d bytes",
                  API_WEBHOOK_URL_MAX);
        goto out;
    }
    if (strpbrk(url->str, "#")) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"url\" must have no fragment");
        goto out;
    }
    const char *fmt = format ? format->str : "json";
    if (strcmp(fmt, "json") != 0 && strcmp(fmt, "slack") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"format\" must be \"json\" or \"slack\"");
        goto out;
    }
    if (strcmp(department->str, "*") != 0 && !api_name_ok(department->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"department\" must be a department's name or \"*\"");
        goto out;
    }
    if (secret->str_len < API_WEBHOOK_SECRET_MIN || secret->str_len > API_WEBHOOK_SECRET_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"signing_secret\" must be %d to %d bytes long", API_WEBHOOK_SECRET_MIN,
                  API_WEBHOOK_SECRET_MAX);
        goto out;
    }
    if (api_webhook_events(ctx, events, &types) != 0) {
        goto out;
    }
    /* an admin of the department, or of "*" for a webhook of every department */
    if (api_allow(ctx, department->str) != 0) {
        goto out;
    }
    if (!ctx->secret_keys) {
        api_error(ctx, 500, "INTERNAL", "no key to seal webhook secrets");
        goto out;
    }
    if (runs_new_id("wh_", id) != 0) {
        api_error(ctx, 500, "INTERNAL", "the random generator failed");
        goto out;
    }
    snprintf(context, sizeof context, "webhook/%s/signing_secret", id);
    if (secretbox_keys_seal(ctx->secret_keys, context, secret->str, secret->str_len, &sealed) !=
        0) {
        api_error(ctx, 500, "INTERNAL", "cannot seal the signing secret");
        goto out;
    }
    /* the scheme and host of the URL: its path may be a credential */
    size_t scheme = strncmp(url->str, "https://", 8) == 0 ? 8 : 7;
    size_t origin = scheme + strcspn(url->str + scheme, "/?#");
    buf_append_str(&details, "{\"url_origin\":");
    json_write_string(&details, url->str, origin);
    buf_printf(&details, ",\"events\":%s", types.data);
    api_member(&details, ",\"department\":", department->str);
    api_member(&details, ",\"format\":", fmt);
    buf_append_str(&details, "}");
    if (buf_failed(&types) || buf_failed(&details) || !details.data) {
        api_error(ctx, 400, "INVALID_REQUEST", "the webhook's definition is too large");
        goto out;
    }
    struct store_webhook w = { id,  url->str, types.data, department->str,
                               fmt, sealed,   NULL,       ctx->who ? ctx->who->name : "airlockd" };
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    int known = strcmp(department->str, "*") == 0;
    enum store_rc rc =
            known ? STORE_OK
                  : s->ops->department_get(s, department->str, api_webhook_department_seen, &known);
    if (rc == STORE_OK && known) {
        rc = s->ops->webhook_create(s, &w);
    }
    if (rc == STORE_OK && known) {
        rc = api_audit(ctx, "webhook.create", id,
                       strcmp(department->str, "*") == 0 ? NULL : department->str, details.data);
    }
    rc = api_tx_end(s, known ? rc : STORE_NOT_FOUND);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 400, "INVALID_REQUEST", "no department %s", department->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        struct api_webhook_list one = { ctx, &ctx->resp->body, 0, id, "", 0 };
        api_reply(ctx, 201);
        if (s->ops->webhook_list(s, api_webhook_one, &one) != STORE_OK || !one.found) {
            api_store_failed(ctx);
        } else {
            buf_append_str(&ctx->resp->body, "\n");
        }
    }
out:
    free(sealed);
    buf_done(&types);
    buf_done(&details);
}

/* The list shows a webhook to the admins of its department (of "*" for one of "*"). */
static int api_webhook_item(void *userdata, const struct store_webhook *w)
{
    struct api_webhook_list *l = userdata;
    struct auth_rule rule = { AUTH_DEPARTMENT, l->ctx->rule.roles };
    char why[AUTH_WHY_MAX];
    if (auth_check(l->ctx->who, &rule, w->department, why) != AUTH_OK) {
        return 0;
    }
    if (l->n++) {
        buf_append_str(l->b, ",");
    }
    api_webhook_json(l->b, w);
    return 0;
}

void api_webhooks_list(struct api_ctx *ctx)
{
    struct api_webhook_list l = { ctx, &ctx->resp->body, 0, NULL, "", 0 };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (!ctx->who || ctx->store->ops->webhook_list(ctx->store, api_webhook_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

static int api_webhook_find(void *userdata, const struct store_webhook *w)
{
    struct api_webhook_list *l = userdata;
    if (strcmp(w->id, l->id) != 0) {
        return 0;
    }
    l->found = 1;
    snprintf(l->department, sizeof l->department, "%s", w->department);
    return 1;
}

void api_webhooks_delete(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct api_webhook_list l = { ctx, NULL, 0, api_param(ctx, "id"), "", 0 };
    struct buf details;
    buf_init(&details, 1024);
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    if (s->ops->webhook_list(s, api_webhook_find, &l) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    if (!l.found) {
        api_error(ctx, 404, "NOT_FOUND", "no webhook %.64s", l.id);
        goto out;
    }
    if (api_allow(ctx, l.department) != 0) {
        goto out;
    }
    api_member(&details, "{\"department\":", l.department);
    buf_append_str(&details, "}");
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->webhook_delete(s, l.id);
    if (rc == STORE_OK) {
        rc = details.data
                     ? api_audit(ctx, "webhook.delete", l.id,
                                 strcmp(l.department, "*") == 0 ? NULL : l.department, details.data)
                     : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no webhook %.64s", l.id);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"id\":", l.id);
        buf_append_str(&ctx->resp->body, ",\"deleted\":true}\n");
    }
out:
    buf_done(&details);
}
