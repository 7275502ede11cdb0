/*
 * api_mounts.c - registering mounts (admin), listing and deleting them, and the checks of a
 * workspace manifest that need them. A mount is storage a department's workspace manifests may
 * name: a local directory under one of airlockd's mounts.local_roots (so an admin key cannot
 * mount /etc), or an S3-compatible bucket. The secret access key is sealed (secretbox.h) bound
 * to the mount's name before it reaches the store; nothing here writes it to an answer, a log
 * line or the audit log. A mount an approved version names cannot be deleted, so what an
 * approver approved keeps meaning the same storage. Each change and its audit record are one
 * transaction.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"

#include "api.h"
#include "jcs.h"
#include "mounts.h"
#include "secretbox.h"

#define API_MOUNT_BUCKET_MIN 3
#define API_MOUNT_BUCKET_MAX 63
#define API_MOUNT_REGION_MAX 64
#define API_MOUNT_KEY_ID_MAX 256
#define API_MOUNT_SECRET_MAX 1024
/* a stored manifest came inside a body of at most API_DEPTH_MAX levels */
#define API_WORKSPACE_DEPTH API_DEPTH_MAX

/* ---------------------------------------------------------------- workspace manifests */

/* One entry of a manifest that names a mount: its path in the workspace, its type and the
 * mount's name. Return non-zero to stop. */
typedef int api_workspace_mount_fn(void *ud, const char *entry, const char *type,
                                   const char *mount);

/* Calls fn for each local_dir and s3_mount entry of manifest `ws`. 0 after all, the first
 * non-zero fn returned, or -1 with *ret_entry the entry that is not an object or whose mount is
 * not a string (the structural checks are al_workspace_new's; these are the ones this file
 * needs to be well defined). */
static int api_workspace_mounts(const struct json_node *ws, api_workspace_mount_fn *fn, void *ud,
                                const char **ret_entry)
{
    const struct json_node *entries = json_get(ws, "entries");
    if (!entries) {
        return 0;
    }
    if (entries->type != JSON_OBJECT) {
        *ret_entry = NULL;
        return -1;
    }
    for (const struct json_node *e = entries->child; e; e = e->next) {
        const struct json_node *type = e->type == JSON_OBJECT ? json_get(e, "type") : NULL;
        if (e->type != JSON_OBJECT || (type && type->type != JSON_STRING)) {
            *ret_entry = e->key;
            return -1;
        }
        if (!type || (strcmp(type->str, "local_dir") != 0 && strcmp(type->str, "s3_mount") != 0)) {
            continue;
        }
        const struct json_node *mount = json_get(e, "mount");
        if (!mount || mount->type != JSON_STRING || strlen(mount->str) != mount->str_len) {
            *ret_entry = e->key;
            return -1;
        }
        int rc = fn(ud, e->key, type->str, mount->str);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

struct api_workspace_check {
    struct api_ctx *ctx;
    const char *department;
    unsigned status;  /* of a refusal: 400 for a manifest given, 409 for one stored */
    const char *code; /* ... and its code */
    const char *what; /* how the message names the manifest */
    int found;
    int s3;
    char department_of[STORE_NAME_MAX + 1];
};

static int api_workspace_mount_read(void *userdata, const struct store_mount *m)
{
    struct api_workspace_check *c = userdata;
    c->found = 1;
    c->s3 = strcmp(m->kind, "s3") == 0;
    snprintf(c->department_of, sizeof c->department_of, "%s", m->department);
    return 0;
}

/* A mount entry names a mount of the department with the kind of its type: 0, or 1 after
 * answering 400 (500 when the store failed). */
static int api_workspace_mount_ok(void *ud, const char *entry, const char *type, const char *mount)
{
    struct api_workspace_check *c = ud;
    struct store *s = c->ctx->store;
    int want_s3 = strcmp(type, "s3_mount") == 0;
    c->found = 0;
    enum store_rc rc = api_name_ok(mount) ? s->ops->mount_get(s, mount, api_workspace_mount_read, c)
                                          : STORE_NOT_FOUND;
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(c->ctx);
        return 1;
    }
    /* a mount of another department is not there, as one that does not exist */
    if (!c->found || strcmp(c->department_of, c->department) != 0) {
        api_error(c->ctx, c->status, c->code,
                  "%s: entry \"%.200s\" names mount \"%.64s\", which is not a mount of "
                  "department %s",
                  c->what, entry, mount, c->department);
        return 1;
    }
    if (c->s3 != want_s3) {
        api_error(c->ctx, c->status, c->code,
                  "%s: entry \"%.200s\" is of type %s, which needs a mount of kind %s; mount "
                  "\"%s\" is of kind %s",
                  c->what, entry, type, want_s3 ? "s3" : "local", mount, c->s3 ? "s3" : "local");
        return 1;
    }
    return 0;
}

int api_workspace_read(struct api_ctx *ctx, const struct json_node *ws, const char *department,
                       struct buf *out)
{
    struct api_workspace_check c = { ctx, department, 400, "INVALID_REQUEST", "field \"workspace\"",
                                     0,   0,          "" };
    const char *entry = NULL;
    struct al_workspace *built = NULL;
    struct al_error err;
    /* the structure is libairlock's to judge, as a run will build it: the same rules here */
    memset(&err, 0, sizeof err);
    enum al_code code = al_workspace_new(ws->raw, ws->raw_len, &built, &err);
    al_workspace_free(built);
    if (code == AL_INTERNAL_ERROR) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (code != AL_OK) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"workspace\": %s", err.message);
        return -1;
    }
    int rc = api_workspace_mounts(ws, api_workspace_mount_ok, &c, &entry);
    if (rc < 0) {
        if (entry) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "field \"workspace\": entry \"%.200s\" must be an object whose \"type\" is "
                      "a string, and whose \"mount\" is a mount's name for type local_dir or "
                      "s3_mount",
                      entry);
        } else {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "field \"workspace\": \"entries\" must be an object");
        }
        return -1;
    }
    if (rc != 0) {
        return -1; /* answered */
    }
    /* kept canonical (RFC 8785): two manifests that differ only in the order of their members
     * are the same text, as they have the same digest */
    memset(&err, 0, sizeof err);
    code = jcs_write(out, ws, NULL, &err);
    if (code == AL_OK && buf_failed(out)) {
        code = out->err == BUF_NO_MEMORY ? AL_INTERNAL_ERROR : AL_OUTPUT_LIMIT;
    }
    if (code == AL_INTERNAL_ERROR) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (code != AL_OK) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"workspace\": %s",
                  code == AL_OUTPUT_LIMIT ? "too large" : err.message);
        return -1;
    }
    return 0;
}

int api_workspace_mounts_ready(struct api_ctx *ctx, const char *workspace, const char *department)
{
    struct api_workspace_check c = { ctx, department, 409, "CONFLICT", "the version's workspace",
                                     0,   0,          "" };
    struct json_doc *doc = NULL;
    struct al_error err;
    const char *entry = NULL;
    int walked = -1; /* 0: all ready; 1: answered by api_workspace_mount_ok */
    if (json_parse(workspace, strlen(workspace), API_WORKSPACE_DEPTH, &doc, &err) == AL_OK) {
        walked = api_workspace_mounts(json_root(doc), api_workspace_mount_ok, &c, &entry);
    }
    if (walked < 0) {
        api_error(ctx, 500, "INTERNAL", "a stored workspace manifest is not what was checked");
    }
    json_doc_free(doc);
    return walked == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- the routes */

static void api_mount_json(struct buf *b, const struct store_mount *m)
{
    api_member(b, "{\"name\":", m->name);
    api_member(b, ",\"department\":", m->department);
    api_member(b, ",\"kind\":", m->kind);
    api_member(b, ",\"path\":", m->path);
    api_member(b, ",\"endpoint\":", m->endpoint);
    api_member(b, ",\"bucket\":", m->bucket);
    api_member(b, ",\"region\":", m->region);
    api_member(b, ",\"access_key_id\":", m->access_key_id);
    api_member(b, ",\"created\":", m->created);
    api_member(b, ",\"created_by\":", m->created_by);
    buf_append_str(b, "}");
}

static int api_mount_one(void *userdata, const struct store_mount *m)
{
    api_mount_json(userdata, m);
    return 0;
}

/* len bytes of s, each among `chars`, len in min..max. */
static int api_mount_text_ok(const struct json_node *s, size_t min, size_t max, const char *chars)
{
    return s->str_len >= min && s->str_len <= max && strlen(s->str) == s->str_len &&
           strspn(s->str, chars) == s->str_len;
}

/* Visible ASCII but space: an access key id or a secret. */
static int api_mount_token_ok(const struct json_node *s, size_t max)
{
    if (s->str_len == 0 || s->str_len > max || strlen(s->str) != s->str_len) {
        return 0;
    }
    for (size_t i = 0; i < s->str_len; i++) {
        if ((unsigned char)s->str[i] <= 0x20 || (unsigned char)s->str[i] >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* The body of a mount of kind s3: 0, or -1 after answering 400. */
static int api_mount_s3_check(struct api_ctx *ctx, const struct json_node *const s3[5])
{
    static const char *const names[] = { "endpoint", "bucket", "region", "access_key_id",
                                         "secret_access_key" };
    for (int i = 0; i < 5; i++) {
        if (!s3[i]) {
            api_error(ctx, 400, "INVALID_REQUEST", "a mount of kind s3 needs field \"%s\"",
                      names[i]);
            return -1;
        }
    }
    if (strpbrk(s3[0]->str, "?#") || !api_url_ok(s3[0]->str, s3[0]->str_len)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"endpoint\" must be an http:// or https:// URL with a host, without "
                  "userinfo, query, fragment or spaces");
        return -1;
    }
    if (!api_mount_text_ok(s3[1], API_MOUNT_BUCKET_MIN, API_MOUNT_BUCKET_MAX,
                           "abcdefghijklmnopqrstuvwxyz0123456789.-") ||
        s3[1]->str[0] == '.' || s3[1]->str[0] == '-') {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"bucket\" must be an S3 bucket name ([a-z0-9][a-z0-9.-]{2,62})");
        return -1;
    }
    if (!api_mount_text_ok(s3[2], 1, API_MOUNT_REGION_MAX,
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"region\" must be 1 to %d letters, digits, '-' or '_'",
                  API_MOUNT_REGION_MAX);
        return -1;
    }
    if (!api_mount_token_ok(s3[3], API_MOUNT_KEY_ID_MAX)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"access_key_id\" must be 1 to %d visible ASCII characters",
                  API_MOUNT_KEY_ID_MAX);
        return -1;
    }
    if (!api_mount_token_ok(s3[4], API_MOUNT_SECRET_MAX)) { /* never echoed */
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"secret_access_key\" must be 1 to %d visible ASCII characters",
                  API_MOUNT_SECRET_MAX);
        return -1;
    }
    return 0;
}

/* What a new mount's body holds once checked, its secret sealed. */
struct api_mount_new {
    const struct json_node *name;
    const struct json_node *department;
    const struct json_node *kind;
    const struct json_node *path;
    const struct json_node *s3[5]; /* endpoint, bucket, region, access_key_id, secret */
    char resolved[PATH_MAX];
    char *sealed;
};

/* Reads and checks the body: 0, or -1 after answering. */
static int api_mount_parse(struct api_ctx *ctx, struct api_mount_new *n)
{
    const struct api_field fields[] = {
        { "name", JSON_STRING, 1, &n->name },
        { "department", JSON_STRING, 1, &n->department },
        { "kind", JSON_STRING, 1, &n->kind },
        { "path", JSON_STRING, 0, &n->path },
        { "endpoint", JSON_STRING, 0, &n->s3[0] },
        { "bucket", JSON_STRING, 0, &n->s3[1] },
        { "region", JSON_STRING, 0, &n->s3[2] },
        { "access_key_id", JSON_STRING, 0, &n->s3[3] },
        { "secret_access_key", JSON_STRING, 0, &n->s3[4] },
    };
    char why[MOUNTS_WHY_MAX];
    char context[STORE_NAME_MAX + 64];
    if (api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        return -1;
    }
    if (!api_name_ok(n->name->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z0-9][a-z0-9._-]{0,63}");
        return -1;
    }
    if (!api_name_ok(n->department->str)) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"department\" is not a department name");
        return -1;
    }
    int local = strcmp(n->kind->str, "local") == 0;
    if (!local && strcmp(n->kind->str, "s3") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"kind\" must be \"local\" or \"s3\"");
        return -1;
    }
    if (local) {
        for (int i = 0; i < 5; i++) {
            if (n->s3[i]) {
                api_error(ctx, 400, "INVALID_REQUEST",
                          "a mount of kind local takes name, department, kind and path only");
                return -1;
            }
        }
        if (!n->path) {
            api_error(ctx, 400, "INVALID_REQUEST", "a mount of kind local needs field \"path\"");
            return -1;
        }
        /* a local stat and readlinks, no network: fine on the writer */
        if (strlen(n->path->str) != n->path->str_len ||
            mounts_local_resolve(ctx->svc ? ctx->svc->mount_roots : NULL, n->path->str, n->resolved,
                                 why) != 0) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"path\": %s",
                      strlen(n->path->str) != n->path->str_len ? "holds NUL" : why);
            return -1;
        }
        return 0;
    }
    if (n->path) {
        api_error(ctx, 400, "INVALID_REQUEST", "a mount of kind s3 takes no \"path\"");
        return -1;
    }
    if (api_mount_s3_check(ctx, n->s3) != 0) {
        return -1;
    }
    if (!ctx->secret_keys) {
        api_error(ctx, 500, "INTERNAL", "no key to seal mount secrets");
        return -1;
    }
    snprintf(context, sizeof context, "mount/%s/secret_access_key", n->name->str);
    if (secretbox_keys_seal(ctx->secret_keys, context, n->s3[4]->str, n->s3[4]->str_len,
                            &n->sealed) != 0) {
        api_error(ctx, 500, "INTERNAL", "cannot seal the secret access key");
        return -1;
    }
    return 0;
}

void api_mounts_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct api_mount_new n;
    struct buf details;
    memset(&n, 0, sizeof n);
    buf_init(&details, (size_t)64 << 10);
    if (api_mount_parse(ctx, &n) != 0) {
        goto out;
    }
    int s3 = n.s3[0] != NULL;
    struct store_mount m = {
        .name = n.name->str,
        .department = n.department->str,
        .kind = s3 ? "s3" : "local",
        .path = s3 ? NULL : n.resolved,
        .endpoint = s3 ? n.s3[0]->str : NULL,
        .bucket = s3 ? n.s3[1]->str : NULL,
        .region = s3 ? n.s3[2]->str : NULL,
        .access_key_id = s3 ? n.s3[3]->str : NULL,
        .secret_sealed = n.sealed,
        .created_by = ctx->who ? ctx->who->name : "airlockd",
    };
    /* the audit sees what the API shows, never the secret */
    api_member(&details, "{\"department\":", m.department);
    api_member(&details, ",\"kind\":", m.kind);
    if (s3) {
        api_member(&details, ",\"endpoint\":", m.endpoint);
        api_member(&details, ",\"bucket\":", m.bucket);
        api_member(&details, ",\"region\":", m.region);
        api_member(&details, ",\"access_key_id\":", m.access_key_id);
    } else {
        api_member(&details, ",\"path\":", m.path);
    }
    buf_append_str(&details, "}");
    if (buf_failed(&details)) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->mount_create(s, &m);
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "mount.created", m.name, m.department, details.data);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "mount %s exists", m.name);
    } else if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 400, "INVALID_REQUEST", "no department %s", m.department);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 201);
        if (s->ops->mount_get(s, m.name, api_mount_one, &ctx->resp->body) == STORE_OK) {
            buf_append_str(&ctx->resp->body, "\n");
        } else {
            api_store_failed(ctx);
        }
    }
out:
    free(n.sealed);
    buf_done(&details);
}

struct api_mount_list {
    struct api_ctx *ctx;
    struct buf *b;
    int n;
};

/* The list shows a mount to whoever holds one of the route's roles in its department. */
static int api_mount_item(void *userdata, const struct store_mount *m)
{
    struct api_mount_list *l = userdata;
    struct auth_rule rule = { AUTH_DEPARTMENT, l->ctx->rule.roles };
    char why[AUTH_WHY_MAX];
    if (auth_check(l->ctx->who, &rule, m->department, why) != AUTH_OK) {
        return 0;
    }
    if (l->n++) {
        buf_append_str(l->b, ",");
    }
    api_mount_json(l->b, m);
    return 0;
}

void api_mounts_list(struct api_ctx *ctx)
{
    struct api_mount_list l = { ctx, &ctx->resp->body, 0 };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (!ctx->who || ctx->store->ops->mount_list(ctx->store, api_mount_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

/* What DELETE reads: the mount, then the first approved version that names it. */
struct api_mount_use {
    int found;
    char department[STORE_NAME_MAX + 1];
    char kind[8];
    const char *name;
    int bad; /* a stored manifest that is not JSON */
    char template_name[STORE_NAME_MAX + 1];
    int64_t version; /* 0: none uses it */
};

static int api_mount_use_read(void *userdata, const struct store_mount *m)
{
    struct api_mount_use *u = userdata;
    u->found = 1;
    snprintf(u->department, sizeof u->department, "%s", m->department);
    snprintf(u->kind, sizeof u->kind, "%s", m->kind);
    return 0;
}

static int api_mount_named(void *ud, const char *entry, const char *type, const char *mount)
{
    (void)entry;
    (void)type;
    return strcmp(mount, ((struct api_mount_use *)ud)->name) == 0;
}

static int api_mount_use_version(void *userdata, const struct store_version *v)
{
    struct api_mount_use *u = userdata;
    struct json_doc *doc = NULL;
    struct al_error err;
    const char *entry = NULL;
    if (json_parse(v->workspace, strlen(v->workspace), API_WORKSPACE_DEPTH, &doc, &err) != AL_OK) {
        u->bad = 1;
        return 1;
    }
    if (api_workspace_mounts(json_root(doc), api_mount_named, u, &entry) == 1) {
        snprintf(u->template_name, sizeof u->template_name, "%s", v->template_name);
        u->version = v->version;
    }
    json_doc_free(doc);
    return u->version != 0;
}

void api_mounts_delete(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct api_mount_use u;
    struct buf details;
    memset(&u, 0, sizeof u);
    u.name = api_param(ctx, "m");
    buf_init(&details, 4096);
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->mount_get(s, u.name, api_mount_use_read, &u);
    if (rc == STORE_OK && !u.found) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK) {
        rc = s->ops->version_list_with_workspace(s, u.department, api_mount_use_version, &u);
    }
    if (rc == STORE_OK && (u.bad || u.version)) {
        s->ops->tx_rollback(s);
        if (u.bad) {
            api_error(ctx, 500, "INTERNAL", "a stored workspace manifest is not JSON");
        } else {
            api_error(ctx, 409, "CONFLICT",
                      "mount %s is named by version %" PRId64 " of template %s, which is "
                      "approved: revoke it first",
                      u.name, u.version, u.template_name);
        }
        goto out;
    }
    if (rc == STORE_OK) {
        rc = s->ops->mount_delete(s, u.name);
    }
    if (rc == STORE_OK) {
        api_member(&details, "{\"department\":", u.department);
        api_member(&details, ",\"kind\":", u.kind);
        buf_append_str(&details, "}");
        rc = details.data ? api_audit(ctx, "mount.deleted", u.name, u.department, details.data)
                          : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no mount %.64s", u.name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"name\":", u.name);
        buf_append_str(&ctx->resp->body, ",\"deleted\":true}\n");
    }
out:
    buf_done(&details);
}
