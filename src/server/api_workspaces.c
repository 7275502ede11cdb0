/*
 * api_workspaces.c - workspaces on runs (docs/server.md "Workspaces"): what a run's workspace
 * left (GET /v1/runs/{id}/files, .../files/{path+}, .../workspace.tar), seen by whoever may see
 * the run, and the tars a run may start from (POST /v1/snapshots). Bytes live in the store's
 * workspace_blobs under their SHA-256, so a file or a tar named by many runs is kept once.
 *
 * A snapshot is untrusted input: checked as an archive when uploaded (against the default
 * limits) and again whenever a workspace loads it (a run's start, against its manifest's).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_runs.h"
#include "error.h"
#include "runs.h"

#define API_SNAPSHOT_ID_LEN 37 /* "snap_" + 32 hex */
/* the manifest of an ad-hoc run that names only the files it starts from, and what an uploaded
 * snapshot is checked against: every limit its default */
#define API_MANIFEST_EMPTY "{\"version\":1}"

/* ---------------------------------------------------------------- a run's files */

struct api_files {
    struct buf *b;
    int n;
};

static int api_file_item(void *userdata, const struct store_run_file *f)
{
    struct api_files *l = userdata;
    api_member(l->b, l->n++ ? ",{\"path\":" : "{\"path\":", f->path);
    buf_printf(l->b, ",\"size\":%" PRId64, f->size);
    api_member(l->b, ",\"sha256\":", f->sha256);
    buf_append_str(l->b, "}");
    return 0;
}

void api_runs_files(struct api_ctx *ctx)
{
    const char *id = api_param(ctx, "id");
    struct buf *b = &ctx->resp->body;
    struct api_files l = { b, 0 };
    if (api_run_visible(ctx) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(b, "{\"files\":[");
    if (ctx->store->ops->run_file_list(ctx->store, id, NULL, api_file_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(b, "]}\n");
}

/* A blob read into the answer's body. */
struct api_blob_answer {
    struct api_ctx *ctx;
    const char *content_type;
    int sent;
};

static int api_blob_reply(void *userdata, const unsigned char *bytes, size_t len)
{
    struct api_blob_answer *a = userdata;
    api_reply(a->ctx, 200);
    a->ctx->resp->content_type = a->content_type;
    buf_append(&a->ctx->resp->body, bytes, len);
    a->sent = 1;
    return 0;
}

/* Answers blob `sha256` with its bytes. */
static void api_blob_send(struct api_ctx *ctx, const char *sha256, const char *content_type)
{
    struct api_blob_answer a = { ctx, content_type, 0 };
    enum store_rc rc = ctx->store->ops->blob_get(ctx->store, sha256, api_blob_reply, &a);
    if (rc != STORE_OK || !a.sent) {
        /* a row names the blob: its absence is the store's failure, never a 404 */
        api_store_failed(ctx);
    }
}

struct api_file_found {
    char sha256[65];
    int found;
};

static int api_file_found_fn(void *userdata, const struct store_run_file *f)
{
    struct api_file_found *found = userdata;
    snprintf(found->sha256, sizeof found->sha256, "%s", f->sha256);
    found->found = 1;
    return 1;
}

void api_runs_file(struct api_ctx *ctx)
{
    const char *id = api_param(ctx, "id");
    const char *path = ctx->tail ? ctx->tail : "";
    struct api_file_found found = { "", 0 };
    if (api_run_visible(ctx) != 0) {
        return;
    }
    enum store_rc rc =
            ctx->store->ops->run_file_list(ctx->store, id, path, api_file_found_fn, &found);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !found.found)) {
        api_error(ctx, 404, "NOT_FOUND", "run %s has no file %.512s", id, path);
        return;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    api_blob_send(ctx, found.sha256, "application/octet-stream");
}

struct api_workspace_found {
    char end_sha256[65];
    int found;
};

static int api_workspace_found_fn(void *userdata, const struct store_run_workspace *w)
{
    struct api_workspace_found *found = userdata;
    if (w->end_sha256) {
        snprintf(found->end_sha256, sizeof found->end_sha256, "%s", w->end_sha256);
        found->found = 1;
    }
    return 1;
}

void api_runs_workspace_tar(struct api_ctx *ctx)
{
    const char *id = api_param(ctx, "id");
    struct api_workspace_found found = { "", 0 };
    if (api_run_visible(ctx) != 0) {
        return;
    }
    enum store_rc rc =
            ctx->store->ops->run_workspace_get(ctx->store, id, api_workspace_found_fn, &found);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !found.found)) {
        /* no workspace, or one whose run has not completed: nothing was kept of it */
        api_error(ctx, 404, "NOT_FOUND", "run %s has no workspace kept at its end", id);
        return;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    api_blob_send(ctx, found.end_sha256, "application/x-tar");
}

/* ---------------------------------------------------------------- POST /v1/snapshots */

/* The upload is a tar a workspace with the default limits loads (al_workspace_load_tar: its
 * members checked as an untrusted archive), so a body sent by mistake or built to escape is
 * refused at once; a run's manifest checks it again against its own limits. 0, or -1 after
 * answering. */
static int api_snapshot_check(struct api_ctx *ctx, const char *body, size_t len)
{
    struct al_workspace *ws = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (len == 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "the body must be a tar archive");
        return -1;
    }
    enum al_code code = al_workspace_new(API_MANIFEST_EMPTY, strlen(API_MANIFEST_EMPTY), &ws, &err);
    if (code == AL_OK) {
        code = al_workspace_load_tar(ws, body, len, &err);
    }
    al_workspace_free(ws);
    if (code == AL_CONFIG_ERROR) {
        api_error(ctx, 400, "INVALID_REQUEST", "the body is not a tar a workspace loads: %s",
                  err.message);
    } else if (code != AL_OK) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
    }
    return code == AL_OK ? 0 : -1;
}

static int api_department_seen(void *userdata, const struct store_department *d)
{
    (void)d;
    *(int *)userdata = 1;
    return 0;
}

/* The query's department, which the caller must be an agent of: NULL after answering. */
static const char *api_snapshot_department(struct api_ctx *ctx)
{
    const char *department = http_query(ctx->req, "department");
    if (!department || !api_name_ok(department) || strcmp(department, "*") == 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "query parameter \"department\" must name the department of the runs that "
                  "start from the snapshot");
        return NULL;
    }
    return api_allow(ctx, department) == 0 ? department : NULL;
}

int api_snapshots_create_before(struct api_ctx *ctx)
{
    /* a tar of 50 MB takes a while to check: never on the writer's thread */
    if (!api_snapshot_department(ctx)) {
        return -1;
    }
    return api_snapshot_check(ctx, ctx->req->body, ctx->req->body_len);
}

void api_snapshots_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *department = api_snapshot_department(ctx);
    const char *body = ctx->req->body;
    size_t len = ctx->req->body_len;
    char id[API_SNAPSHOT_ID_LEN + 1];
    char created[RUNS_TIME_LEN];
    char sha256[65] = "";
    int seen = 0;
    if (!department) {
        return;
    }
    enum store_rc rc = s->ops->department_get(s, department, api_department_seen, &seen);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !seen)) {
        api_error(ctx, 404, "NOT_FOUND", "no department %s", department);
        return;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    if (runs_new_id("snap_", id) != 0) {
        api_error(ctx, 500, "INTERNAL", "the random generator failed");
        return;
    }
    runs_time_text(runs_now_ms(), created);
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    rc = s->ops->blob_put(s, body, len, sha256);
    struct store_snapshot snap = { id, ctx->who->name, department, sha256, (int64_t)len, created };
    if (rc == STORE_OK) {
        rc = s->ops->snapshot_create(s, &snap);
    }
    struct buf d;
    buf_init(&d, 1024);
    api_member(&d, "{\"snapshot\":", id);
    api_member(&d, ",\"department\":", department);
    api_member(&d, ",\"principal\":", ctx->who->name);
    api_member(&d, ",\"sha256\":", sha256);
    buf_printf(&d, ",\"bytes\":%zu}", len);
    if (rc == STORE_OK) {
        rc = d.data ? api_audit(ctx, "snapshot.create", id, department, d.data) : STORE_ERROR;
    }
    buf_done(&d);
    rc = api_tx_end(s, rc);
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 201);
    api_member(b, "{\"id\":", id);
    api_member(b, ",\"department\":", department);
    api_member(b, ",\"sha256\":", sha256);
    buf_printf(b, ",\"bytes\":%zu", len);
    api_member(b, ",\"created\":", created);
    buf_append_str(b, "}\n");
}

/* ---------------------------------------------------------------- a new run's workspace */

void api_run_workspace_done(struct api_run_workspace *w)
{
    free(w->manifest);
    free(w->tar);
    memset(w, 0, sizeof *w);
}

/* blob_get's callback: the bytes copied into the workspace's start tar. */
static int api_tar_copy(void *userdata, const unsigned char *bytes, size_t len)
{
    struct api_run_workspace *w = userdata;
    w->tar = malloc(len ? len : 1);
    if (w->tar) {
        memcpy(w->tar, bytes, len);
        w->tar_len = len;
    }
    return 0;
}

/* The run a workspace starts from, as far as its checks need it. */
struct api_from_run {
    int found;
    char template_name[STORE_NAME_MAX + 1];
    char department[STORE_NAME_MAX + 1];
    char principal[STORE_NAME_MAX + 1];
    enum gov_run_state state;
    char manifest_sha256[65];
    char end_sha256[65];
    int has_workspace;
};

static int api_from_run_fn(void *userdata, const struct store_run *row)
{
    struct api_from_run *f = userdata;
    f->found = 1;
    snprintf(f->template_name, sizeof f->template_name, "%s", row->template_name);
    snprintf(f->department, sizeof f->department, "%s", row->department);
    snprintf(f->principal, sizeof f->principal, "%s", row->principal);
    f->state = api_run_state(row->status);
    return 0;
}

static int api_from_run_workspace_fn(void *userdata, const struct store_run_workspace *w)
{
    struct api_from_run *f = userdata;
    f->has_workspace = 1;
    snprintf(f->manifest_sha256, sizeof f->manifest_sha256, "%s", w->manifest_sha256);
    snprintf(f->end_sha256, sizeof f->end_sha256, "%s", w->end_sha256 ? w->end_sha256 : "");
    return 1;
}

static int api_manifest_copy(void *userdata, const unsigned char *bytes, size_t len)
{
    char **manifest = userdata;
    *manifest = strndup((const char *)bytes, len);
    return 0;
}

/* "from_run": a run the caller may see (else 404, as if it did not exist), of the same
 * template for a template run, that completed with its workspace kept. Its end tar replaces
 * the inline entries; an ad-hoc run that names no manifest of its own takes the run's. */
static int api_workspace_from_run(struct api_ctx *ctx, const char *id, const char *template_name,
                                  struct api_run_workspace *w, char **ret_manifest)
{
    struct store *s = ctx->store;
    struct api_from_run f;
    struct gov_decision d;
    memset(&f, 0, sizeof f);
    enum store_rc rc = s->ops->run_get(s, id, api_from_run_fn, &f);
    if (rc == STORE_OK && f.found) {
        struct gov_run r = { id, f.department, f.principal, f.state };
        f.found = gov_run_may_see(&ctx->who->gov, &r, &d);
    }
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !f.found)) {
        api_error(ctx, 404, "NOT_FOUND", "workspace: no run %s", id);
        return -1;
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_workspace_get(s, id, api_from_run_workspace_fn, &f);
        rc = rc == STORE_NOT_FOUND ? STORE_OK : rc;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    if (template_name && strcmp(f.template_name, template_name) != 0) {
        api_error(ctx, 409, "CONFLICT", "workspace: run %s is not a run of template %s", id,
                  template_name);
        return -1;
    }
    if (!f.end_sha256[0]) {
        api_error(ctx, 409, "CONFLICT", "workspace: run %s has no workspace kept at its end", id);
        return -1;
    }
    snprintf(w->start_sha256, sizeof w->start_sha256, "%s", f.end_sha256);
    snprintf(w->from_run, sizeof w->from_run, "%s", id);
    rc = s->ops->blob_get(s, f.end_sha256, api_tar_copy, w);
    if (rc == STORE_OK && ret_manifest) {
        rc = s->ops->blob_get(s, f.manifest_sha256, api_manifest_copy, ret_manifest);
    }
    if (rc != STORE_OK || !w->tar || (ret_manifest && !*ret_manifest)) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

struct api_snapshot_seen {
    int found;
    char principal[STORE_NAME_MAX + 1];
    char department[STORE_NAME_MAX + 1];
    char sha256[65];
};

static int api_snapshot_seen_fn(void *userdata, const struct store_snapshot *snap)
{
    struct api_snapshot_seen *seen = userdata;
    seen->found = 1;
    snprintf(seen->principal, sizeof seen->principal, "%s", snap->principal);
    snprintf(seen->department, sizeof seen->department, "%s", snap->department);
    snprintf(seen->sha256, sizeof seen->sha256, "%s", snap->sha256);
    return 1;
}

/* "from_snapshot": a snapshot its caller uploaded (another's is 404, as if it did not exist),
 * for the run's department. */
static int api_workspace_from_snapshot(struct api_ctx *ctx, const char *id, const char *department,
                                       struct api_run_workspace *w)
{
    struct store *s = ctx->store;
    struct api_snapshot_seen seen;
    memset(&seen, 0, sizeof seen);
    enum store_rc rc = s->ops->snapshot_get(s, id, api_snapshot_seen_fn, &seen);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !seen.found) ||
        (rc == STORE_OK && strcmp(seen.principal, ctx->who->name) != 0)) {
        api_error(ctx, 404, "NOT_FOUND", "workspace: no snapshot %s", id);
        return -1;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    if (strcmp(seen.department, department) != 0) {
        api_error(ctx, 409, "CONFLICT", "workspace: snapshot %s is for department %s", id,
                  seen.department);
        return -1;
    }
    snprintf(w->start_sha256, sizeof w->start_sha256, "%s", seen.sha256);
    snprintf(w->from_snapshot, sizeof w->from_snapshot, "%s", id);
    rc = s->ops->blob_get(s, seen.sha256, api_tar_copy, w);
    if (rc != STORE_OK || !w->tar) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

/* The manifest members of `ws`: everything but from_run and from_snapshot, as an object;
 * *ret_members the number of them. NULL when out of memory. */
static char *api_manifest_of(const struct json_node *ws, size_t *ret_members)
{
    struct buf b;
    size_t n = 0;
    buf_init(&b, ws->raw_len + 2);
    buf_append_str(&b, "{");
    for (const struct json_node *m = ws->child; m; m = m->next) {
        if (strcmp(m->key, "from_run") == 0 || strcmp(m->key, "from_snapshot") == 0) {
            continue;
        }
        buf_append_str(&b, n++ ? "," : "");
        json_write_string(&b, m->key, m->key_len);
        buf_append_str(&b, ":");
        buf_append(&b, m->raw, m->raw_len);
    }
    buf_append_str(&b, "}");
    *ret_members = n;
    char *text = b.data ? strndup(b.data, b.len) : NULL;
    buf_done(&b);
    return text;
}

/* An ad-hoc manifest given in full: its mounts those of the run's department, of the kind
 * each entry needs, kept canonical (api_workspace_read, as a version's). *manifest is replaced
 * by the canonical text. 0, or -1 after answering. */
static int api_manifest_read(struct api_ctx *ctx, const char *department, char **manifest)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    struct buf canon;
    int ret = -1;
    buf_init(&canon, (size_t)2 << 20);
    if (json_parse(*manifest, strlen(*manifest), API_DEPTH_MAX, &doc, &err) != AL_OK) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        goto out;
    }
    if (api_workspace_read(ctx, json_root(doc), department, &canon) != 0) {
        goto out;
    }
    free(*manifest);
    *manifest = strndup(canon.data, canon.len);
    ret = 0;
out:
    json_doc_free(doc);
    buf_done(&canon);
    return ret;
}

/* The manifest as libairlock builds it (al_workspace_new), and the tar it starts from loaded
 * into it (al_workspace_load_tar: members checked as an untrusted archive, against the
 * manifest's limits): what a run would refuse at its start is refused now, naming the member.
 * 0, or -1 after answering 400. */
static int api_manifest_check(struct api_ctx *ctx, const char *manifest,
                              const struct api_run_workspace *w)
{
    struct al_workspace *ws = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code code = al_workspace_new(manifest, strlen(manifest), &ws, &err);
    if (code == AL_OK && w->tar) {
        code = al_workspace_load_tar(ws, w->tar, w->tar_len, &err);
        if (code == AL_CONFIG_ERROR) {
            api_error(ctx, 400, "INVALID_REQUEST", "workspace: the tar of %s %s: %s",
                      w->from_run[0] ? "run" : "snapshot",
                      w->from_run[0] ? w->from_run : w->from_snapshot, err.message);
        }
    } else if (code == AL_CONFIG_ERROR) {
        api_error(ctx, 400, "INVALID_REQUEST", "workspace: %s", err.message);
    }
    al_workspace_free(ws);
    if (code != AL_OK && code != AL_CONFIG_ERROR) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
    }
    return code == AL_OK ? 0 : -1;
}

int api_run_workspace_resolve(struct api_ctx *ctx, const struct json_node *ws,
                              const char *template_name, const char *version_manifest,
                              const char *department, struct api_run_workspace *ret)
{
    size_t members = 0;
    char *manifest = NULL;
    char *taken = NULL; /* from_run's manifest, for an ad-hoc run naming none */
    memset(ret, 0, sizeof *ret);
    if (!ws) {
        /* a template run's workspace is its version's */
        ret->manifest = version_manifest ? strdup(version_manifest) : NULL;
        if (version_manifest && !ret->manifest) {
            api_error(ctx, 500, "INTERNAL", "out of memory");
            return -1;
        }
        return 0;
    }
    const struct json_node *from_run = json_get(ws, "from_run");
    const struct json_node *from_snapshot = json_get(ws, "from_snapshot");
    const char *wrong = NULL;
    manifest = api_manifest_of(ws, &members);
    if (!manifest) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (from_run && from_snapshot) {
        wrong = "give \"from_run\" or \"from_snapshot\", not both";
    } else if ((from_run && from_run->type != JSON_STRING) ||
               (from_snapshot && from_snapshot->type != JSON_STRING)) {
        wrong = "\"from_run\" and \"from_snapshot\" are ids (strings)";
    } else if (template_name && members > 0) {
        wrong = "a template run's manifest is its version's: give only \"from_run\" or "
                "\"from_snapshot\"";
    } else if (template_name && !version_manifest) {
        wrong = "the template's version has no workspace";
    }
    if (wrong) {
        api_error(ctx, 400, "INVALID_REQUEST", "workspace: %s", wrong);
        goto fail;
    }
    if (from_run && api_workspace_from_run(ctx, from_run->str, template_name, ret,
                                           template_name || members ? NULL : &taken) != 0) {
        goto fail;
    }
    if (from_snapshot &&
        api_workspace_from_snapshot(ctx, from_snapshot->str, department, ret) != 0) {
        goto fail;
    }
    if (template_name) {
        free(manifest);
        manifest = strdup(version_manifest);
    } else if (taken) {
        free(manifest);
        manifest = taken;
        taken = NULL;
    } else if (members == 0) {
        free(manifest);
        manifest = strdup(API_MANIFEST_EMPTY);
    } else if (api_manifest_read(ctx, department, &manifest) != 0) {
        goto fail;
    }
    if (!manifest) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        goto fail;
    }
    if (api_manifest_check(ctx, manifest, ret) != 0) {
        goto fail;
    }
    ret->manifest = manifest;
    return 0;
fail:
    free(manifest);
    free(taken);
    api_run_workspace_done(ret);
    return -1;
}

/* ---------------------------------------------------------------- a run's workspace, kept */

enum store_rc api_run_workspace_record(struct store *s, const char *run,
                                       const struct api_run_workspace *w, struct buf *details)
{
    char manifest_sha256[65];
    if (!w->manifest) {
        return STORE_OK;
    }
    enum store_rc rc = s->ops->blob_put(s, w->manifest, strlen(w->manifest), manifest_sha256);
    struct store_run_workspace row = { run, manifest_sha256,
                                       w->start_sha256[0] ? w->start_sha256 : NULL, NULL };
    if (rc == STORE_OK) {
        rc = s->ops->run_workspace_create(s, &row);
    }
    /* the manifest whole when it fits a record (inline files may not), and where it started */
    buf_append_str(details, ",");
    runs_put_bounded(details, "workspace", w->manifest, strlen(w->manifest));
    api_member(details, ",\"workspace_sha256\":", manifest_sha256);
    if (w->from_run[0] || w->from_snapshot[0]) {
        api_member(details,
                   w->from_run[0] ? ",\"workspace_from\":{\"run\":"
                                  : ",\"workspace_from\":{\"snapshot\":",
                   w->from_run[0] ? w->from_run : w->from_snapshot);
        api_member(details, ",\"sha256\":", w->start_sha256);
        buf_append_str(details, "}");
    }
    return rc;
}

/* The run's workspace read for its plan. */
struct api_plan_workspace {
    int found;
    char manifest_sha256[65];
    char start_sha256[65];
};

static int api_plan_workspace_fn(void *userdata, const struct store_run_workspace *w)
{
    struct api_plan_workspace *p = userdata;
    p->found = 1;
    snprintf(p->manifest_sha256, sizeof p->manifest_sha256, "%s", w->manifest_sha256);
    snprintf(p->start_sha256, sizeof p->start_sha256, "%s", w->start_sha256 ? w->start_sha256 : "");
    return 1;
}

static int api_plan_tar_fn(void *userdata, const unsigned char *bytes, size_t len)
{
    struct runs_plan *plan = userdata;
    plan->workspace_tar = malloc(len ? len : 1);
    if (plan->workspace_tar) {
        memcpy(plan->workspace_tar, bytes, len);
        plan->workspace_tar_len = len;
    }
    return 0;
}

enum store_rc api_run_workspace_plan(struct store *s, const char *id, struct runs_plan *plan)
{
    struct api_plan_workspace p;
    memset(&p, 0, sizeof p);
    enum store_rc rc = s->ops->run_workspace_get(s, id, api_plan_workspace_fn, &p);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !p.found)) {
        return STORE_OK;
    }
    if (rc == STORE_OK) {
        rc = s->ops->blob_get(s, p.manifest_sha256, api_manifest_copy, &plan->workspace_manifest);
    }
    if (rc == STORE_OK && p.start_sha256[0]) {
        rc = s->ops->blob_get(s, p.start_sha256, api_plan_tar_fn, plan);
    }
    if (rc == STORE_OK &&
        (!plan->workspace_manifest || (p.start_sha256[0] && !plan->workspace_tar))) {
        rc = STORE_ERROR; /* out of memory */
    }
    return rc;
}

enum store_rc api_run_workspace_of(struct store *s, const char *id, struct api_run_workspace *ret)
{
    struct api_plan_workspace p;
    memset(ret, 0, sizeof *ret);
    memset(&p, 0, sizeof p);
    enum store_rc rc = s->ops->run_workspace_get(s, id, api_plan_workspace_fn, &p);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !p.found)) {
        return STORE_OK;
    }
    if (rc == STORE_OK) {
        rc = s->ops->blob_get(s, p.manifest_sha256, api_manifest_copy, &ret->manifest);
    }
    if (rc == STORE_OK && p.start_sha256[0]) {
        snprintf(ret->start_sha256, sizeof ret->start_sha256, "%s", p.start_sha256);
        rc = s->ops->blob_get(s, p.start_sha256, api_tar_copy, ret);
    }
    if (rc == STORE_OK && (!ret->manifest || (p.start_sha256[0] && !ret->tar))) {
        rc = STORE_ERROR; /* out of memory */
    }
    if (rc != STORE_OK) {
        api_run_workspace_done(ret);
    }
    return rc;
}

/* ---------------------------------------------------------------- a plan's mounts */

enum store_rc api_run_workspace_mounts(struct store *s, struct secretbox_keys *secret_keys,
                                       const struct mounts_roots *roots, struct runs_plan *plan,
                                       struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    enum store_rc rc = STORE_OK;
    const char *manifest = plan->workspace_manifest;
    if (json_parse(manifest, strlen(manifest), API_DEPTH_MAX, &doc, &jerr) != AL_OK) {
        error_set(reterr, AL_CONFIG_ERROR, "the run's workspace manifest is not JSON");
        return STORE_CONFLICT;
    }
    const struct json_node *entries = json_get(json_root(doc), "entries");
    size_t n = entries && entries->type == JSON_OBJECT ? entries->count : 0;
    plan->mounts = calloc(n ? n : 1, sizeof *plan->mounts);
    if (!plan->mounts) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        rc = STORE_ERROR;
    }
    for (const struct json_node *e = n ? entries->child : NULL; e && rc == STORE_OK; e = e->next) {
        const struct json_node *type = e->type == JSON_OBJECT ? json_get(e, "type") : NULL;
        const struct json_node *mount = e->type == JSON_OBJECT ? json_get(e, "mount") : NULL;
        int s3 = type && type->type == JSON_STRING && strcmp(type->str, "s3_mount") == 0;
        int local = type && type->type == JSON_STRING && strcmp(type->str, "local_dir") == 0;
        if ((!s3 && !local) || !mount || mount->type != JSON_STRING) {
            continue; /* not a mount (al_workspace_new refuses a malformed one) */
        }
        int again = 0;
        for (size_t i = 0; i < plan->nmounts && !again; i++) {
            again = strcmp(plan->mounts[i].name, mount->str) == 0;
        }
        if (again) {
            continue;
        }
        struct mounts_mount *m = &plan->mounts[plan->nmounts];
        char why[MOUNTS_WHY_MAX] = "";
        rc = mounts_lookup(s, secret_keys, roots, mount->str, m, why);
        if (rc == STORE_OK) {
            plan->nmounts++;
        } else {
            mounts_mount_done(m);
        }
        /* a mount gone, moved or unusable since the manifest was checked: nothing starts */
        if (rc != STORE_OK) {
            error_set(reterr, AL_CONFIG_ERROR, "workspace: entry \"%.200s\": %s", e->key, why);
            rc = STORE_CONFLICT;
        } else if (strcmp(m->department, plan->department) != 0 || m->s3 != s3) {
            error_set(reterr, AL_CONFIG_ERROR,
                      "workspace: entry \"%.200s\" names mount %s, which is not a%s mount of "
                      "department %s",
                      e->key, m->name, s3 ? "n s3" : " local", plan->department);
            rc = STORE_CONFLICT;
        }
    }
    json_doc_free(doc);
    return rc;
}
