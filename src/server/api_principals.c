/*
 * api_principals.c - principals, their API keys and role grants (admin), and /v1/me. A key is
 * shown once, in the answer that creates it, and is never stored, logged or audited: only its
 * prefix is. Each change and its audit record are one transaction. A principal of kind user may
 * be linked to the identity its identity provider signs it in as; a disabled principal keeps
 * its keys and grants but acts no more (auth_principal_load refuses it), and its runs in
 * progress end as if its last key were revoked. An admin cannot disable or delete itself, so
 * the desk is never left without the admin who was working it by mistake.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

struct api_list {
    struct buf *b;
    int n;
    struct store *store;
    const struct gov_principal *scoped; /* a reader of some departments only, else NULL */
};

static int api_grant_item(void *userdata, const struct store_grant *g)
{
    struct api_list *l = userdata;
    struct gov_decision d;
    if (l->scoped && !gov_audit_may_see(l->scoped, g->department, &d)) {
        return 0; /* another department's grant, or one for all: not this reader's business */
    }
    buf_append_str(l->b, l->n++ ? ",{\"role\":" : "{\"role\":");
    api_str(l->b, g->role);
    api_member(l->b, ",\"department\":", g->department);
    buf_append_str(l->b, "}");
    return 0;
}

static int api_key_item(void *userdata, const struct store_key *k)
{
    struct api_list *l = userdata;
    buf_append_str(l->b, l->n++ ? ",{\"prefix\":" : "{\"prefix\":");
    api_str(l->b, k->prefix);
    api_member(l->b, ",\"created\":", k->created);
    api_member(l->b, ",\"revoked\":", k->revoked);
    buf_append_str(l->b, "}");
    return 0;
}

/* Counts the grants a scoped reader may see (api_grant_item's filter). */
static int api_grant_count(void *userdata, const struct store_grant *g)
{
    struct api_list *l = userdata;
    struct gov_decision d;
    l->n += gov_audit_may_see(l->scoped, g->department, &d);
    return 0;
}

/* Appends a principal with its roles and keys; non-zero stops the walk on a store failure. A
 * reader of some departments only (l->scoped) sees the principals holding a role in one of them,
 * with those roles alone and no keys: the rest is for readers of every department, as in the
 * audit log (gov_audit_may_see). */
static int api_principal_item(void *userdata, const struct store_principal *p)
{
    struct api_list *l = userdata;
    struct api_list roles = { l->b, 0, l->store, l->scoped };
    struct api_list keys = { l->b, 0, l->store, NULL };
    if (l->scoped) {
        struct api_list seen = { NULL, 0, l->store, l->scoped };
        if (l->store->ops->role_list(l->store, p->name, api_grant_count, &seen) != STORE_OK) {
            return 1;
        }
        if (seen.n == 0) {
            return 0; /* none of its roles is in the reader's departments */
        }
    }
    if (l->n++) {
        buf_append_str(l->b, ",");
    }
    api_member(l->b, "{\"name\":", p->name);
    api_member(l->b, ",\"kind\":", p->kind);
    api_member(l->b, ",\"created\":", p->created);
    api_member(l->b, ",\"identity\":", p->identity);
    buf_printf(l->b, ",\"disabled\":%s", p->disabled ? "true" : "false");
    buf_append_str(l->b, ",\"roles\":[");
    if (l->store->ops->role_list(l->store, p->name, api_grant_item, &roles) != STORE_OK) {
        return 1;
    }
    buf_append_str(l->b, "],\"keys\":[");
    if (!l->scoped && l->store->ops->key_list(l->store, p->name, api_key_item, &keys) != STORE_OK) {
        return 1;
    }
    buf_append_str(l->b, "]}");
    return 0;
}

/* Creates a key for `principal` inside the caller's transaction and audits it. */
static enum store_rc api_key_issue(struct api_ctx *ctx, const char *principal, char *ret_key,
                                   char *ret_prefix)
{
    unsigned char hash[STORE_HASH_LEN];
    char details[128];
    if (auth_key_new(ret_key, ret_prefix, hash) != 0) {
        return STORE_ERROR;
    }
    enum store_rc rc = ctx->store->ops->key_add(ctx->store, principal, ret_prefix, hash);
    OPENSSL_cleanse(hash, sizeof hash);
    if (rc == STORE_OK) {
        snprintf(details, sizeof details, "{\"prefix\":\"%s\"}", ret_prefix);
        rc = api_audit(ctx, "key.create", principal, NULL, details);
    }
    return rc;
}

/* An identity as an identity provider names a person (an e-mail address, a subject): 1 to
 * API_IDENTITY_MAX bytes of UTF-8 with no control character. */
#define API_IDENTITY_MAX 256

static int api_identity_ok(const struct json_node *identity)
{
    if (identity->str_len == 0 || identity->str_len > API_IDENTITY_MAX ||
        strlen(identity->str) != identity->str_len) {
        return 0;
    }
    for (size_t i = 0; i < identity->str_len; i++) {
        unsigned char c = (unsigned char)identity->str[i];
        if (c < 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* Checks the identity member of a body for a principal of `kind`: 0, or -1 after answering 400. */
static int api_identity_check(struct api_ctx *ctx, const struct json_node *identity,
                              const char *kind)
{
    if (identity->type == JSON_NULL) {
        return 0;
    }
    if (identity->type != JSON_STRING || !api_identity_ok(identity)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"identity\" must be a string of 1 to %d bytes without control "
                  "characters (or null)",
                  API_IDENTITY_MAX);
        return -1;
    }
    if (strcmp(kind, "user") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"identity\" is for principals of kind user: an agent signs in with "
                  "its keys only");
        return -1;
    }
    return 0;
}

void api_principals_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const struct json_node *name = NULL;
    const struct json_node *kind = NULL;
    const struct json_node *identity = NULL;
    const struct api_field fields[] = { { "name", JSON_STRING, 1, &name },
                                        { "kind", JSON_STRING, 0, &kind },
                                        { "identity", API_FIELD_ANY, 0, &identity } };
    char key[AUTH_KEY_MAX + 1] = "";
    char prefix[AUTH_PREFIX_LEN + 1] = "";
    struct buf details;
    buf_init(&details, 4096);
    if (api_body(ctx, fields, 3) != 0) {
        goto out;
    }
    const char *k = kind ? kind->str : "user";
    if (!api_name_ok(name->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z0-9][a-z0-9._-]{0,63}");
        goto out;
    }
    if (strcmp(k, "user") != 0 && strcmp(k, "agent") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"kind\" must be \"user\" or \"agent\"");
        goto out;
    }
    const char *linked = identity && identity->type == JSON_STRING ? identity->str : NULL;
    if (identity && api_identity_check(ctx, identity, k) != 0) {
        goto out;
    }
    buf_printf(&details, "{\"kind\":\"%s\"", k);
    if (linked) {
        api_member(&details, ",\"identity\":", linked);
    }
    buf_append_str(&details, "}");
    if (!details.data) { /* out of memory: nothing begun, nothing to roll back */
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->tx_begin(s);
    int identity_taken = 0;
    if (rc == STORE_OK) {
        rc = s->ops->principal_create(s, name->str, k);
    }
    if (rc == STORE_OK && linked) {
        rc = s->ops->principal_set_identity(s, name->str, linked);
        identity_taken = rc == STORE_CONFLICT;
    }
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "principal.create", name->str, NULL, details.data);
    }
    if (rc == STORE_OK) {
        rc = api_key_issue(ctx, name->str, key, prefix);
    }
    rc = api_tx_end(s, rc);
    if (identity_taken) {
        api_error(ctx, 409, "CONFLICT", "another principal has identity %s", linked);
    } else if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "principal %s exists", name->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 201);
        api_member(&ctx->resp->body, "{\"name\":", name->str);
        buf_printf(&ctx->resp->body, ",\"kind\":\"%s\",\"key\":\"%s\",\"prefix\":\"%s\"", k, key,
                   prefix);
        api_member(&ctx->resp->body, ",\"identity\":", linked);
        buf_append_str(&ctx->resp->body, "}\n");
    }
out:
    OPENSSL_cleanse(key, sizeof key);
    buf_done(&details);
}

void api_principals_list(struct api_ctx *ctx)
{
    struct gov_decision d;
    const struct gov_principal *who = &ctx->who->gov;
    struct api_list l = { &ctx->resp->body, 0, ctx->store,
                          gov_audit_may_see(who, NULL, &d) ? NULL : who };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (ctx->store->ops->principal_list(ctx->store, api_principal_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

void api_principals_me(struct api_ctx *ctx)
{
    struct api_list l = { &ctx->resp->body, 0, ctx->store, NULL };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    if (ctx->store->ops->principal_get(ctx->store, ctx->who->name, api_principal_item, &l) !=
        STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    /* a session of the web UI: the CSRF token its changes must carry, and its roles */
    if (ctx->who->session && l.b->len > 0 && l.b->data[l.b->len - 1] == '}') {
        l.b->len--;
        buf_printf(l.b, ",\"csrf_token\":\"%s\",\"session_roles\":[", ctx->who->csrf);
        /* what the session holds: the grants, and those group_roles gave at its sign-in */
        for (size_t i = 0; i < ctx->who->gov.ngrants; i++) {
            const struct gov_grant *g = &ctx->who->gov.grants[i];
            api_member(l.b, i ? ",{\"role\":" : "{\"role\":", gov_role_name(g->role));
            api_member(l.b, ",\"department\":", g->department);
            buf_append_str(l.b, "}");
        }
        buf_append_str(l.b, "]}");
    }
    buf_append_str(l.b, "\n");
}

void api_principals_key_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *principal = api_param(ctx, "p");
    char key[AUTH_KEY_MAX + 1] = "";
    char prefix[AUTH_PREFIX_LEN + 1] = "";
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = api_key_issue(ctx, principal, key, prefix);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no principal %s", principal);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 201);
        api_member(&ctx->resp->body, "{\"principal\":", principal);
        buf_printf(&ctx->resp->body, ",\"key\":\"%s\",\"prefix\":\"%s\"}\n", key, prefix);
    }
    OPENSSL_cleanse(key, sizeof key);
}

void api_principals_key_revoke(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *principal = api_param(ctx, "p");
    const char *prefix = api_param(ctx, "prefix");
    struct api_cancels *cancels = NULL;
    struct buf details;
    buf_init(&details, 4096);
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    api_member(&details, "{\"prefix\":", prefix);
    buf_append_str(&details, "}");
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->key_revoke(s, principal, prefix);
    }
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "key.revoke", principal, NULL, details.data);
    }
    if (rc == STORE_OK) {
        /* its last key gone, its runs in progress go with it */
        rc = api_principal_revoking(ctx, principal, &cancels);
    }
    rc = api_tx_end(s, rc);
    api_principal_revoked(ctx, cancels, rc == STORE_OK);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "principal %s has no active key %s", principal, prefix);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"principal\":", principal);
        api_member(&ctx->resp->body, ",\"prefix\":", prefix);
        buf_append_str(&ctx->resp->body, ",\"revoked\":true}\n");
    }
out:
    buf_done(&details);
}

static int api_department_exists(void *userdata, const struct store_department *d)
{
    (void)userdata;
    (void)d;
    return 0;
}

/* POST and DELETE /v1/principals/{p}/roles share their body and checks. */
static void api_principals_role(struct api_ctx *ctx, int grant)
{
    struct store *s = ctx->store;
    const char *principal = api_param(ctx, "p");
    const struct json_node *role = NULL;
    const struct json_node *dept = NULL;
    const struct api_field fields[] = { { "role", JSON_STRING, 1, &role },
                                        { "department", JSON_STRING, 1, &dept } };
    char details[2 * STORE_NAME_MAX + 64];
    struct api_cancels *cancels = NULL;
    enum store_rc rc;
    if (api_body(ctx, fields, 2) != 0) {
        return;
    }
    unsigned bit = auth_role_bit(role->str);
    int global = strcmp(dept->str, "*") == 0;
    if (bit == 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"role\" must be admin, author, approver, auditor or agent");
        return;
    }
    if (!global && !api_name_ok(dept->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"department\" must be a department's name or \"*\"");
        return;
    }
    if (bit == AUTH_ROLE_ADMIN && !global) {
        api_error(ctx, 400, "INVALID_REQUEST", "admin is global: its department must be \"*\"");
        return;
    }
    /* a role's and a department's names need no escaping */
    snprintf(details, sizeof details, "{\"role\":\"%s\",\"department\":\"%s\"}", role->str,
             dept->str);
    rc = s->ops->tx_begin(s);
    if (rc == STORE_OK && grant && !global) {
        rc = s->ops->department_get(s, dept->str, api_department_exists, NULL);
        if (rc == STORE_NOT_FOUND) {
            s->ops->tx_rollback(s);
            api_error(ctx, 404, "NOT_FOUND", "no department %s", dept->str);
            return;
        }
    }
    if (rc == STORE_OK) {
        rc = grant ? s->ops->role_grant(s, principal, role->str, dept->str)
                   : s->ops->role_revoke(s, principal, role->str, dept->str);
    }
    if (rc == STORE_OK) {
        rc = api_audit(ctx, grant ? "role.grant" : "role.revoke", principal,
                       global ? NULL : dept->str, details);
    }
    if (rc == STORE_OK && !grant) {
        /* the runs it may no longer start end with the role that let it start them */
        rc = api_principal_revoking(ctx, principal, &cancels);
    }
    rc = api_tx_end(s, rc);
    api_principal_revoked(ctx, cancels, rc == STORE_OK);
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "%s already has role %s in %s", principal, role->str,
                  dept->str);
    } else if (rc == STORE_NOT_FOUND && grant) {
        api_error(ctx, 404, "NOT_FOUND", "no principal %s", principal);
    } else if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "%s has no role %s in %s", principal, role->str,
                  dept->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, grant ? 201 : 200);
        api_member(&ctx->resp->body, "{\"principal\":", principal);
        buf_printf(&ctx->resp->body, ",%s\n", details + 1); /* the record's members follow */
    }
}

void api_principals_role_grant(struct api_ctx *ctx)
{
    api_principals_role(ctx, 1);
}

void api_principals_role_revoke(struct api_ctx *ctx)
{
    api_principals_role(ctx, 0);
}

/* A principal as stored, for PATCH and DELETE to check before they change it. */
struct api_principal_row {
    int found;
    char kind[8];
    int disabled;
};

static int api_principal_row(void *userdata, const struct store_principal *p)
{
    struct api_principal_row *row = userdata;
    row->found = 1;
    snprintf(row->kind, sizeof row->kind, "%s", p->kind);
    row->disabled = p->disabled;
    return 0;
}

/* Answers 200 with principal `name` as GET /v1/principals/{p} shows it to an admin. */
static void api_principal_reply(struct api_ctx *ctx, const char *name)
{
    struct api_list l = { &ctx->resp->body, 0, ctx->store, NULL };
    api_reply(ctx, 200);
    if (ctx->store->ops->principal_get(ctx->store, name, api_principal_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "\n");
}

void api_principals_get(struct api_ctx *ctx)
{
    struct gov_decision d;
    const struct gov_principal *who = &ctx->who->gov;
    const char *name = api_param(ctx, "p");
    struct api_list l = { &ctx->resp->body, 0, ctx->store,
                          gov_audit_may_see(who, NULL, &d) ? NULL : who };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    enum store_rc rc = ctx->store->ops->principal_get(ctx->store, name, api_principal_item, &l);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && l.n == 0)) {
        /* a scoped reader learns nothing of principals outside its departments */
        api_error(ctx, 404, "NOT_FOUND", "no principal %s", name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        buf_append_str(l.b, "\n");
    }
}

void api_principals_patch(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *name = api_param(ctx, "p");
    const struct json_node *identity = NULL;
    const struct json_node *disabled = NULL;
    const struct api_field fields[] = { { "identity", API_FIELD_ANY, 0, &identity },
                                        { "disabled", JSON_TRUE, 0, &disabled } };
    struct api_principal_row row;
    struct api_cancels *cancels = NULL;
    struct buf details;
    memset(&row, 0, sizeof row);
    buf_init(&details, 4096);
    if (api_body(ctx, fields, 2) != 0) {
        goto out;
    }
    if (!identity && !disabled) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "nothing to change: give \"identity\" or \"disabled\"");
        goto out;
    }
    int disable = disabled && disabled->type == JSON_TRUE;
    if (disable && strcmp(name, ctx->who->name) == 0) {
        api_error(ctx, 409, "CONFLICT", "%s cannot disable itself", name);
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->principal_get(s, name, api_principal_row, &row);
    if (rc == STORE_OK && identity && api_identity_check(ctx, identity, row.kind) != 0) {
        s->ops->tx_rollback(s);
        goto out;
    }
    const char *linked = identity && identity->type == JSON_STRING ? identity->str : NULL;
    int identity_taken = 0;
    buf_append_str(&details, "{");
    if (rc == STORE_OK && identity) {
        rc = s->ops->principal_set_identity(s, name, linked);
        identity_taken = rc == STORE_CONFLICT;
        api_member(&details, "\"identity\":", linked);
    }
    if (rc == STORE_OK && disabled) {
        rc = s->ops->principal_set_disabled(s, name, disable);
        buf_printf(&details, "%s\"disabled\":%s", identity ? "," : "", disable ? "true" : "false");
    }
    buf_append_str(&details, "}");
    if (rc == STORE_OK) {
        rc = details.data ? api_audit(ctx, "principal.update", name, NULL, details.data)
                          : STORE_ERROR;
    }
    if (rc == STORE_OK && disable && !row.disabled) {
        /* a disabled principal's runs in progress end as with its last key */
        rc = api_principal_revoking(ctx, name, &cancels);
    }
    rc = api_tx_end(s, rc);
    api_principal_revoked(ctx, cancels, rc == STORE_OK);
    if (identity_taken) {
        api_error(ctx, 409, "CONFLICT", "another principal has identity %s", linked);
    } else if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no principal %s", name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_principal_reply(ctx, name);
    }
out:
    buf_done(&details);
}

void api_principals_delete(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *name = api_param(ctx, "p");
    struct api_principal_row row;
    struct api_cancels *cancels = NULL;
    char details[64];
    memset(&row, 0, sizeof row);
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    if (strcmp(name, ctx->who->name) == 0) {
        api_error(ctx, 409, "CONFLICT", "%s cannot delete itself", name);
        return;
    }
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->principal_get(s, name, api_principal_row, &row);
    }
    if (rc == STORE_OK) {
        rc = s->ops->principal_delete(s, name);
    }
    if (rc == STORE_OK) {
        snprintf(details, sizeof details, "{\"kind\":\"%s\"}", row.kind);
        rc = api_audit(ctx, "principal.delete", name, NULL, details);
    }
    if (rc == STORE_OK) {
        /* no key and no role left: its runs in progress end with it */
        rc = api_principal_revoking(ctx, name, &cancels);
    }
    rc = api_tx_end(s, rc);
    api_principal_revoked(ctx, cancels, rc == STORE_OK);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no principal %s", name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"name\":", name);
        buf_append_str(&ctx->resp->body, ",\"deleted\":true}\n");
    }
}
