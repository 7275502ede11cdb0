/*
 * api_templates.c - templates and their versions: what code an agent may run, and who decided.
 * An author of a template's department writes numbered versions; each starts as a draft, is
 * submitted by an author and approved or rejected by an approver who is not its author (four
 * eyes), and an approved version can be revoked by an approver or an admin at once. A version's
 * content never changes after creation; its digest (sha256 over the RFC 8785 form of source,
 * language, input_schema, functions, autonomy, limits and - when it has one - its workspace
 * manifest) names exactly what was approved. A version without a workspace digests as it did
 * before workspaces existed.
 *
 * Every change and its audit record are one transaction, and a state change is conditional on
 * the state it leaves (store version_set_state), so two approvers racing a revoker cannot leave
 * a revoked version approved. Reads follow the department: an agent sees only approved versions
 * of its own departments, an auditor the departments it audits; admins see everything. A
 * template or version the caller may not read answers 404 from every route that names it, the
 * same as one that does not exist, before any check of the caller's role there. Who may read,
 * write or move a version is src/gov's decision (rules.h); a handler reads the facts, asks,
 * writes, answers.
 *
 * The connectors named in a version's functions are not checked here: a version may be written
 * before its connector exists; a run refuses a function no connector serves.
 */
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "diff.h"
#include "jcs.h"
#include "replays.h"
#include "schema.h"
#include "tsdecl.h"
#include "webhooks.h"

#define TPL_SOURCE_MAX  ((size_t)256 << 10) /* the runner's default source limit */
#define TPL_FUNCS_MAX   64u
#define TPL_IDENT_MAX   64u
#define TPL_IDENT_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$"
#define TPL_DESC_MAX    1024u
#define TPL_COMMENT_MAX 4096u
#define TPL_VERSION_MAX 1000000000000LL
#define TPL_DIFF_MAX    ((size_t)4 << 20)   /* bytes of a diff answer */
#define TPL_AUDIT_MAX   ((size_t)768 << 10) /* bytes of a version.create record's details */

/* The limits a version may set, with the maxima al_config_set_limit accepts. */
static const struct {
    const char *name;
    double max;
} tpl_limits[] = {
    { "timeout_ms", 365.0 * 24 * 3600 * 1000 }, /* durations: one year */
    { "cpu_ms", 365.0 * 24 * 3600 * 1000 },
    { "memory_bytes", 1099511627776.0 }, /* heap: 1 TiB */
    { "output_bytes", 67108864.0 },      /* result: 64 MiB */
    { "host_calls", 16777216.0 },        /* counts: 2^24 */
};
#define TPL_NLIMITS (sizeof tpl_limits / sizeof tpl_limits[0])

/* ---------------------------------------------------------------- reading and visibility */

struct tpl_info {
    int found;
    char name[STORE_NAME_MAX + 1];
    char department[STORE_NAME_MAX + 1];
};

static int tpl_info_read(void *userdata, const struct store_template *t)
{
    struct tpl_info *ti = userdata;
    ti->found = 1;
    snprintf(ti->name, sizeof ti->name, "%s", t->name);
    snprintf(ti->department, sizeof ti->department, "%s", t->department);
    return 0;
}

/* Looks the route's {t} up: 0 with ti filled, or -1 after answering 404 or 500. */
static int tpl_lookup(struct api_ctx *ctx, struct tpl_info *ti)
{
    const char *name = api_param(ctx, "t");
    memset(ti, 0, sizeof *ti);
    enum store_rc rc = ctx->store->ops->template_get(ctx->store, name, tpl_info_read, ti);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !ti->found)) {
        api_error(ctx, 404, "NOT_FOUND", "no template %s", name);
        return -1;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

static int tpl_found(void *userdata, const struct store_version *v)
{
    (void)v;
    *(int *)userdata = 1;
    return 0;
}

/* May the caller read template ti (gov_template_may_read)? 0, or -1 after answering 404 (to
 * the caller, it does not exist), 403 (no role at all) or 500. */
static int tpl_may_read(struct api_ctx *ctx, const struct tpl_info *ti)
{
    struct gov_template t = { ti->name, ti->department, 0 };
    struct gov_decision d;
    enum store_rc rc =
            ctx->store->ops->version_get(ctx->store, ti->name, 0, tpl_found, &t.approved);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(ctx);
        return -1;
    }
    gov_template_may_read(&ctx->who->gov, &t, &d);
    return api_decision(ctx, &d);
}

/* Looks the route's {t} up as the caller may see it: 0 with ti filled, or -1 after answering
 * (tpl_lookup, tpl_may_read). */
static int tpl_lookup_readable(struct api_ctx *ctx, struct tpl_info *ti)
{
    return tpl_lookup(ctx, ti) != 0 || tpl_may_read(ctx, ti) != 0 ? -1 : 0;
}

/* A read route's start: no body, the template {t} as the caller may see it (404). 0 with ti
 * filled, or -1 after answering. */
static int tpl_read_route(struct api_ctx *ctx, struct tpl_info *ti)
{
    if (api_body(ctx, NULL, 0) != 0 || tpl_lookup_readable(ctx, ti) != 0) {
        return -1;
    }
    return 0;
}

/* May the caller write the department's templates (a template, a version)? 0, or -1 after
 * answering 403. */
static int tpl_allow_write(struct api_ctx *ctx, const char *department)
{
    struct gov_decision d;
    gov_may(&ctx->who->gov, GOV_ROLE_AUTHOR, department, &d);
    return api_decision(ctx, &d);
}

/* 1 when the caller sees only the department's approved versions (gov_template_view). */
static int tpl_approved_only(const struct api_ctx *ctx, const char *department)
{
    return gov_template_view(&ctx->who->gov, department) != GOV_VIEW_ALL;
}

/* May `reader` read stored version v (gov_version_may_read)? */
static int tpl_readable(const struct gov_principal *reader, const struct store_version *v)
{
    struct gov_version g = { v->template_name, v->version, v->department, v->author,
                             api_version_state(v->state) };
    struct gov_decision d;
    return gov_version_may_read(reader, &g, &d);
}

/* The route's {v} (or a query's from=): a decimal version number 1..TPL_VERSION_MAX, else 0. */
static int64_t tpl_version_number(const char *s)
{
    if (!s || !*s || *s == '0' || strspn(s, "0123456789") != strlen(s)) {
        return 0;
    }
    long long n = strtoll(s, NULL, 10); /* saturates: too long is past the maximum too */
    return n <= TPL_VERSION_MAX ? n : 0;
}

/* ---------------------------------------------------------------- JSON of rows */

/* A version's summary (whole: 0), as a template lists it, or the whole version (whole: 1). */
static void tpl_version_json(struct buf *b, const struct store_version *v, int whole)
{
    api_member(b, "{\"template\":", v->template_name);
    buf_printf(b, ",\"version\":%" PRId64, v->version);
    if (whole) {
        api_member(b, ",\"department\":", v->department);
    }
    api_member(b, ",\"state\":", v->state);
    api_member(b, ",\"digest\":", v->digest);
    api_member(b, ",\"author\":", v->author);
    api_member(b, ",\"created\":", v->created);
    if (!whole) {
        buf_append_str(b, "}");
        return;
    }
    api_member(b, ",\"language\":", v->language);
    api_member(b, ",\"autonomy\":", v->autonomy);
    /* stored compact by this file: valid JSON */
    buf_printf(b,
               ",\"functions\":%s,\"limits\":%s,\"input_schema\":%s,\"workspace\":%s,\"source\":",
               v->functions, v->limits, v->input_schema, v->workspace ? v->workspace : "null");
    api_str(b, v->source);
    api_member(b, ",\"submitted\":", v->submitted);
    api_member(b, ",\"submitted_by\":", v->submitted_by);
    api_member(b, ",\"approved\":", v->approved);
    api_member(b, ",\"approved_by\":", v->approved_by);
    api_member(b, ",\"approve_comment\":", v->approve_comment);
    api_member(b, ",\"rejected\":", v->rejected);
    api_member(b, ",\"rejected_by\":", v->rejected_by);
    api_member(b, ",\"reject_comment\":", v->reject_comment);
    api_member(b, ",\"revoked\":", v->revoked);
    api_member(b, ",\"revoked_by\":", v->revoked_by);
    api_member(b, ",\"revoke_reason\":", v->revoke_reason);
    buf_append_str(b, "}");
}

struct tpl_versions {
    struct buf *b;
    int n;
    const struct gov_principal *reader;
};

static int tpl_version_item(void *userdata, const struct store_version *v)
{
    struct tpl_versions *l = userdata;
    if (!tpl_readable(l->reader, v)) {
        return 0;
    }
    if (l->n++) {
        buf_append_str(l->b, ",");
    }
    tpl_version_json(l->b, v, 0);
    return 0;
}

/* Appends the template object with the summaries of the versions `reader` may read; *ret_n
 * gets how many. */
static enum store_rc tpl_template_json(struct store *s, struct buf *b,
                                       const struct store_template *t,
                                       const struct gov_principal *reader, int *ret_n)
{
    struct tpl_versions l = { b, 0, reader };
    api_member(b, "{\"name\":", t->name);
    api_member(b, ",\"department\":", t->department);
    api_member(b, ",\"description\":", t->description);
    api_member(b, ",\"created\":", t->created);
    api_member(b, ",\"created_by\":", t->created_by);
    buf_append_str(b, ",\"versions\":[");
    enum store_rc rc = s->ops->version_list(s, t->name, tpl_version_item, &l);
    buf_append_str(b, "]}");
    *ret_n = l.n;
    return rc;
}

/* One version as `reader` (NULL: anyone) may read it (found only then; to an agent, a version
 * not approved does not exist): appended whole to b when b is set, else its content copied past
 * the store's callback. */
struct tpl_copy {
    const struct gov_principal *reader;
    struct buf *b;
    int found;
    char *source;
    char *language;
    char *input_schema;
    char *functions;
    char *autonomy;
    char *limits;
    char *workspace;    /* NULL: the version has none */
    int workspace_lost; /* it has one, not copied (out of memory) */
};

static void tpl_copy_done(struct tpl_copy *c)
{
    free(c->source);
    free(c->language);
    free(c->input_schema);
    free(c->functions);
    free(c->autonomy);
    free(c->limits);
    free(c->workspace);
    memset(c, 0, sizeof *c);
}

static int tpl_copy_read(void *userdata, const struct store_version *v)
{
    struct tpl_copy *c = userdata;
    if (c->reader && !tpl_readable(c->reader, v)) {
        return 0;
    }
    c->found = 1;
    if (c->b) {
        tpl_version_json(c->b, v, 1);
        return 0;
    }
    c->source = buf_dup(v->source, strlen(v->source));
    c->language = buf_dup(v->language, strlen(v->language));
    c->input_schema = buf_dup(v->input_schema, strlen(v->input_schema));
    c->functions = buf_dup(v->functions, strlen(v->functions));
    c->autonomy = buf_dup(v->autonomy, strlen(v->autonomy));
    c->limits = buf_dup(v->limits, strlen(v->limits));
    c->workspace = v->workspace ? buf_dup(v->workspace, strlen(v->workspace)) : NULL;
    c->workspace_lost = v->workspace && !c->workspace;
    return 0;
}

static int tpl_copy_ok(const struct tpl_copy *c)
{
    return c->source && c->language && c->input_schema && c->functions && c->autonomy &&
           c->limits && !c->workspace_lost;
}

/* Reads version `number` (0: none) of ti into c: 0, or -1 after answering 404 or 500. */
static int tpl_copy_get(struct api_ctx *ctx, const struct tpl_info *ti, int64_t number,
                        struct tpl_copy *c)
{
    struct store *s = ctx->store;
    enum store_rc rc =
            number ? s->ops->version_get(s, ti->name, number, tpl_copy_read, c) : STORE_NOT_FOUND;
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !c->found)) {
        api_error(ctx, 404, "NOT_FOUND", "no version %.32s of template %s", api_param(ctx, "v"),
                  ti->name);
        return -1;
    }
    if (rc != STORE_OK || (!c->b && !tpl_copy_ok(c))) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

/* Answers status with version `number` of ti, whole, when `reader` (NULL: anyone) may read it. */
static void tpl_reply_version(struct api_ctx *ctx, unsigned status, const struct tpl_info *ti,
                              int64_t number, const struct gov_principal *reader)
{
    struct tpl_copy c = { .reader = reader, .b = &ctx->resp->body };
    api_reply(ctx, status);
    if (tpl_copy_get(ctx, ti, number, &c) == 0) {
        buf_append_str(&ctx->resp->body, "\n");
    }
}

/* ---------------------------------------------------------------- templates */

struct tpl_list {
    const struct gov_principal *who;
    enum store_rc rc;
    /* template_list's rows are borrowed while it walks; the versions are read after it */
    size_t count;
    size_t cap;
    struct tpl_row {
        char name[STORE_NAME_MAX + 1];
        char department[STORE_NAME_MAX + 1];
        char created[32];
        char created_by[STORE_NAME_MAX + 1];
        char *description;
    } * rows;
};

static int tpl_list_collect(void *userdata, const struct store_template *t)
{
    struct tpl_list *l = userdata;
    if (gov_template_view(l->who, t->department) == GOV_VIEW_NONE) {
        return 0;
    }
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct tpl_row *rows = realloc(l->rows, cap * sizeof *rows);
        if (!rows) {
            l->rc = STORE_ERROR;
            return 1;
        }
        l->rows = rows;
        l->cap = cap;
    }
    struct tpl_row *r = &l->rows[l->count];
    snprintf(r->name, sizeof r->name, "%s", t->name);
    snprintf(r->department, sizeof r->department, "%s", t->department);
    snprintf(r->created, sizeof r->created, "%s", t->created);
    snprintf(r->created_by, sizeof r->created_by, "%s", t->created_by);
    r->description = buf_dup(t->description, strlen(t->description));
    if (!r->description) {
        l->rc = STORE_ERROR;
        return 1;
    }
    l->count++;
    return 0;
}

void api_templates_list(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct buf *b = &ctx->resp->body;
    struct tpl_list l;
    memset(&l, 0, sizeof l);
    l.who = &ctx->who->gov;
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    enum store_rc rc = s->ops->template_list(s, tpl_list_collect, &l);
    if (rc == STORE_OK) {
        rc = l.rc;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    api_reply(ctx, 200);
    buf_append_str(b, "[");
    int shown = 0;
    for (size_t i = 0; i < l.count && rc == STORE_OK; i++) {
        struct tpl_row *r = &l.rows[i];
        struct store_template t = { r->name, r->department, r->description, r->created,
                                    r->created_by };
        int approved_only = tpl_approved_only(ctx, r->department);
        size_t mark = b->len;
        int n = 0;
        if (shown) {
            buf_append_str(b, ",");
        }
        rc = tpl_template_json(s, b, &t, l.who, &n);
        if (approved_only && n == 0 && b->data) {
            /* an agent lists the approved templates only */
            b->len = mark;
            b->data[mark] = '\0';
        } else {
            shown = 1;
        }
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    buf_append_str(b, "]\n");
out:
    for (size_t i = 0; i < l.count; i++) {
        free(l.rows[i].description);
    }
    free(l.rows);
}

struct tpl_one {
    struct store *store;
    struct buf *b;
    const struct gov_principal *reader;
    enum store_rc rc;
    int n;
};

static int tpl_template_one(void *userdata, const struct store_template *t)
{
    struct tpl_one *o = userdata;
    o->rc = tpl_template_json(o->store, o->b, t, o->reader, &o->n);
    return 0;
}

/* Answers status with the template object of `name`, with the versions the caller may read. */
static void tpl_reply_template(struct api_ctx *ctx, unsigned status, const char *name)
{
    struct tpl_one o = { ctx->store, &ctx->resp->body, &ctx->who->gov, STORE_OK, 0 };
    api_reply(ctx, status);
    enum store_rc rc = ctx->store->ops->template_get(ctx->store, name, tpl_template_one, &o);
    if (rc != STORE_OK || o.rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(&ctx->resp->body, "\n");
}

/* Writes template `name` and its template.create record in one transaction: 0, or -1 after
 * answering. */
static int tpl_create_store(struct api_ctx *ctx, const char *name, const char *department,
                            const char *description)
{
    struct store *s = ctx->store;
    struct buf details;
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    buf_init(&details, 16 * 1024);
    api_member(&details, "{\"template\":", name);
    api_member(&details, ",\"department\":", department);
    api_member(&details, ",\"description\":", description);
    buf_append_str(&details, "}");
    enum store_rc rc = s->ops->template_create(s, name, department, description, ctx->who->name);
    if (rc == STORE_OK) {
        rc = details.data ? api_audit(ctx, "template.create", name, department, details.data)
                          : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    buf_done(&details);
    if (rc == STORE_OK) {
        return 0;
    }
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "template %s exists", name);
    } else if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no department %s", department);
    } else {
        api_store_failed(ctx);
    }
    return -1;
}

void api_templates_create(struct api_ctx *ctx)
{
    const struct json_node *name = NULL;
    const struct json_node *dept = NULL;
    const struct json_node *desc = NULL;
    const struct api_field fields[] = { { "name", JSON_STRING, 1, &name },
                                        { "department", JSON_STRING, 1, &dept },
                                        { "description", JSON_STRING, 0, &desc } };
    if (api_body(ctx, fields, 3) != 0 || tpl_allow_write(ctx, dept->str) != 0) {
        return;
    }
    if (!api_name_ok(name->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z0-9][a-z0-9._-]{0,63}");
        return;
    }
    const char *description = desc ? desc->str : "";
    if (strlen(description) > TPL_DESC_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"description\" is over %u bytes",
                  TPL_DESC_MAX);
        return;
    }
    if (tpl_create_store(ctx, name->str, dept->str, description) == 0) {
        tpl_reply_template(ctx, 201, name->str);
    }
}

void api_templates_get(struct api_ctx *ctx)
{
    struct tpl_info ti;
    if (tpl_read_route(ctx, &ti) != 0) {
        return;
    }
    tpl_reply_template(ctx, 200, ti.name);
}

/* ---------------------------------------------------------------- versions */

/* The len bytes at s, which a '.' or NUL ends, are a JavaScript identifier of ASCII letters,
 * digits, _ and $. */
static int tpl_ident_ok(const char *s, size_t len)
{
    return len > 0 && len <= TPL_IDENT_MAX && !(s[0] >= '0' && s[0] <= '9') &&
           strspn(s, TPL_IDENT_CHARS) >= len;
}

/* Checks functions and writes them compact to out; -1 after answering 400. */
static int tpl_functions(struct api_ctx *ctx, const struct json_node *arr, struct buf *out)
{
    buf_append_str(out, "[");
    if (arr && arr->count > TPL_FUNCS_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"functions\" has more than %u names",
                  TPL_FUNCS_MAX);
        return -1;
    }
    for (const struct json_node *f = arr ? arr->child : NULL; f; f = f->next) {
        if (f->type != JSON_STRING) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"functions\" must hold strings");
            return -1;
        }
        const char *dot = memchr(f->str, '.', f->str_len);
        if (!dot || !tpl_ident_ok(f->str, (size_t)(dot - f->str)) ||
            !tpl_ident_ok(dot + 1, f->str_len - (size_t)(dot - f->str) - 1)) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "function \"%.140s\" is not \"connector.fn\" (two JavaScript identifiers)",
                      f->str);
            return -1;
        }
        for (const struct json_node *g = arr->child; g != f; g = g->next) {
            if (g->str_len == f->str_len && memcmp(g->str, f->str, f->str_len) == 0) {
                api_error(ctx, 400, "INVALID_REQUEST", "function \"%s\" is listed twice", f->str);
                return -1;
            }
        }
        if (f != arr->child) {
            buf_append_str(out, ",");
        }
        api_str(out, f->str);
    }
    buf_append_str(out, "]");
    return 0;
}

/* Checks limits and writes them compact, in tpl_limits order, to out; -1 after answering 400. */
static int tpl_limits_read(struct api_ctx *ctx, const struct json_node *obj, struct buf *out)
{
    for (const struct json_node *m = obj ? obj->child : NULL; m; m = m->next) {
        size_t i = 0;
        while (i < TPL_NLIMITS && strcmp(tpl_limits[i].name, m->key) != 0) {
            i++;
        }
        if (i == TPL_NLIMITS || strlen(m->key) != m->key_len) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "unknown limit \"%.64s\" (timeout_ms, cpu_ms, memory_bytes, output_bytes, "
                      "host_calls)",
                      m->key);
            return -1;
        }
        for (const struct json_node *g = obj->child; g != m; g = g->next) {
            if (strcmp(g->key, m->key) == 0) {
                api_error(ctx, 400, "INVALID_REQUEST", "limit \"%s\" appears twice", m->key);
                return -1;
            }
        }
        if (m->type != JSON_NUMBER || !(m->num >= 1) || m->num > tpl_limits[i].max ||
            m->num != (double)(uint64_t)m->num) {
            api_error(ctx, 400, "INVALID_REQUEST", "limit \"%s\" must be an integer in 1..%.0f",
                      m->key, tpl_limits[i].max);
            return -1;
        }
    }
    buf_append_str(out, "{");
    int n = 0;
    for (size_t i = 0; i < TPL_NLIMITS; i++) {
        const struct json_node *m = obj ? json_get(obj, tpl_limits[i].name) : NULL;
        if (m) {
            buf_printf(out, "%s\"%s\":%" PRIu64, n++ ? "," : "", tpl_limits[i].name,
                       (uint64_t)m->num);
        }
    }
    buf_append_str(out, "}");
    return 0;
}

/* "sha256:" + hex of the canonical form of content_json (a JSON object): AL_OK;
 * AL_SERIALIZATION_ERROR when it has no canonical form (a number out of range);
 * AL_INTERNAL_ERROR when out of memory. */
static enum al_code tpl_digest(const char *content_json, size_t len, char ret[72])
{
    struct json_doc *doc = NULL;
    struct buf canon;
    struct al_error err;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    buf_init(&canon, (size_t)8 << 20);
    enum al_code code = json_parse(content_json, len, 2 * API_DEPTH_MAX, &doc, &err);
    if (code == AL_OK) {
        code = jcs_write(&canon, json_root(doc), NULL, &err);
    }
    if (code == AL_OK && buf_failed(&canon)) {
        code = canon.err == BUF_NO_MEMORY ? AL_INTERNAL_ERROR : AL_SERIALIZATION_ERROR;
    }
    if (code == AL_OK &&
        (EVP_Digest(canon.data, canon.len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)) {
        code = AL_INTERNAL_ERROR;
    }
    if (code == AL_OK) {
        memcpy(ret, "sha256:", 7);
        for (unsigned i = 0; i < mdlen; i++) {
            snprintf(ret + 7 + 2 * i, 3, "%02x", md[i]);
        }
    }
    json_doc_free(doc);
    buf_done(&canon);
    return code == AL_OK || code == AL_INTERNAL_ERROR ? code : AL_SERIALIZATION_ERROR;
}

/* A new version's body, and its parts checked, in the forms stored and digested. */
struct tpl_draft {
    const struct json_node *source;
    const struct json_node *language;
    const struct json_node *schema;
    const struct json_node *functions;
    const struct json_node *autonomy;
    const struct json_node *limits;
    const struct json_node *workspace; /* NULL: none */
    const char *lang;                  /* "js" or "ts" */
    const char *mode;                  /* an autonomy's name */
    struct buf funcs;
    struct buf lims;
    struct buf schema_text;
    struct buf workspace_text; /* compact */
    struct buf content;        /* what the digest covers */
    char digest[72];
};

static void tpl_draft_init(struct tpl_draft *d)
{
    memset(d, 0, sizeof *d);
    buf_init(&d->funcs, 64 * 1024);
    buf_init(&d->lims, 4096);
    buf_init(&d->schema_text, SCHEMA_TEXT_MAX);
    buf_init(&d->workspace_text, (size_t)2 << 20);
    buf_init(&d->content, (size_t)4 << 20);
}

static void tpl_draft_done(struct tpl_draft *d)
{
    buf_done(&d->funcs);
    buf_done(&d->lims);
    buf_done(&d->schema_text);
    buf_done(&d->workspace_text);
    buf_done(&d->content);
}

static int tpl_draft_body(struct api_ctx *ctx, struct tpl_draft *d)
{
    const struct api_field fields[] = {
        { "source", JSON_STRING, 1, &d->source },
        { "language", JSON_STRING, 0, &d->language },
        { "input_schema", JSON_OBJECT, 0, &d->schema },
        { "functions", JSON_ARRAY, 0, &d->functions },
        { "autonomy", JSON_STRING, 0, &d->autonomy },
        { "limits", JSON_OBJECT, 0, &d->limits },
        { "workspace", JSON_OBJECT, 0, &d->workspace },
    };
    return api_body(ctx, fields, sizeof fields / sizeof fields[0]);
}

/* Checks the source, language and autonomy: 0, or -1 after answering 400. */
static int tpl_draft_scalars(struct api_ctx *ctx, struct tpl_draft *d)
{
    enum gov_autonomy autonomy = GOV_AUTONOMOUS;
    if (d->source->str_len == 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"source\" is empty");
        return -1;
    }
    if (d->source->str_len > TPL_SOURCE_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"source\" is over %zu bytes",
                  TPL_SOURCE_MAX);
        return -1;
    }
    struct gov_source_char bidi;
    if (gov_source_bidi(d->source->str, d->source->str_len, &bidi)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"source\" holds U+%04X at %u:%u, a bidirectional control character: "
                  "with it code can read as a comment or a string to a reviewer (Trojan Source); "
                  "a string that needs one writes it as an escape (\"\\u%04x\")",
                  (unsigned)bidi.code_point, bidi.line, bidi.column, (unsigned)bidi.code_point);
        return -1;
    }
    d->lang = d->language ? d->language->str : "js";
    if (strcmp(d->lang, "js") != 0 && strcmp(d->lang, "ts") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"language\" must be \"js\" or \"ts\"");
        return -1;
    }
    if (d->autonomy && gov_autonomy_parse(d->autonomy->str, &autonomy) != 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"autonomy\" must be \"autonomous\" or \"supervised\"");
        return -1;
    }
    d->mode = gov_autonomy_name(autonomy);
    return 0;
}

/* Checks the body's members (a workspace's mounts as those of ti's department) and makes the
 * content and its digest: 0, or -1 after answering 400. */
static int tpl_draft_check(struct api_ctx *ctx, const struct tpl_info *ti, struct tpl_draft *d)
{
    struct schema *compiled = NULL;
    struct al_error err;
    if (tpl_draft_scalars(ctx, d) != 0) {
        return -1;
    }
    if (d->schema) {
        memset(&err, 0, sizeof err);
        enum al_code code = schema_compile(d->schema->raw, d->schema->raw_len, &compiled, &err);
        if (code == AL_INTERNAL_ERROR) {
            api_error(ctx, 500, "INTERNAL", "out of memory");
            return -1;
        }
        if (code != AL_OK) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"input_schema\": %s", err.message);
            return -1;
        }
        schema_free(compiled);
        enum buf_status st =
                json_write_compact(&d->schema_text, d->schema->raw, d->schema->raw_len);
        if (st != BUF_OK) {
            api_error(ctx, st == BUF_NO_MEMORY ? 500 : 400,
                      st == BUF_NO_MEMORY ? "INTERNAL" : "INVALID_REQUEST",
                      st == BUF_NO_MEMORY ? "out of memory"
                                          : "field \"input_schema\" is too large");
            return -1;
        }
    } else {
        buf_append_str(&d->schema_text, "{}");
    }
    if (tpl_functions(ctx, d->functions, &d->funcs) != 0 ||
        tpl_limits_read(ctx, d->limits, &d->lims) != 0 ||
        (d->workspace &&
         api_workspace_read(ctx, d->workspace, ti->department, &d->workspace_text) != 0)) {
        return -1;
    }
    /* the content the digest covers, in a form jcs sorts */
    api_member(&d->content, "{\"source\":", d->source->str);
    api_member(&d->content, ",\"language\":", d->lang);
    buf_append_str(&d->content, ",\"input_schema\":");
    buf_append(&d->content, d->schema_text.data, d->schema_text.len);
    buf_printf(&d->content, ",\"functions\":%s,\"autonomy\":\"%s\",\"limits\":%s", d->funcs.data,
               d->mode, d->lims.data);
    if (d->workspace) {
        /* only when there is one: a version without keeps the digest it always had */
        buf_append_str(&d->content, ",\"workspace\":");
        buf_append(&d->content, d->workspace_text.data, d->workspace_text.len);
    }
    buf_append_str(&d->content, "}");
    const struct buf *parts[] = { &d->content, &d->funcs, &d->lims, &d->schema_text,
                                  &d->workspace_text };
    enum al_code code = AL_OK;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && code == AL_OK; i++) {
        code = parts[i]->err == BUF_NO_MEMORY ? AL_INTERNAL_ERROR
               : parts[i]->err != BUF_OK      ? AL_OUTPUT_LIMIT
                                              : AL_OK;
    }
    if (code == AL_OUTPUT_LIMIT) {
        api_error(ctx, 400, "INVALID_REQUEST", "the version is too large");
        return -1;
    }
    if (code == AL_OK) {
        code = tpl_digest(d->content.data, d->content.len, d->digest);
    }
    if (code == AL_INTERNAL_ERROR) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (code != AL_OK) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "the version has no canonical form (a number out of range in input_schema?)");
        return -1;
    }
    return 0;
}

/* The version.create record: the whole content, so the log shows what each digest stands
 * for. -1 after answering 400 when it would be over TPL_AUDIT_MAX. */
static int tpl_draft_details(struct api_ctx *ctx, const struct tpl_info *ti,
                             const struct tpl_draft *d, int64_t number, struct buf *out)
{
    api_member(out, "{\"template\":", ti->name);
    buf_printf(out, ",\"version\":%" PRId64 ",\"digest\":\"%s\",", number, d->digest);
    buf_append(out, d->content.data + 1, d->content.len - 1);
    if (out->len > TPL_AUDIT_MAX) {
        /* escaped control characters can make a short source a long record */
        api_error(ctx, 400, "INVALID_REQUEST", "the version's audit record would be over %zu bytes",
                  TPL_AUDIT_MAX);
        return -1;
    }
    return 0;
}

/* Writes the version and its record in one transaction: 0 with *ret_number, or -1 after
 * answering. */
static int tpl_draft_store(struct api_ctx *ctx, const struct tpl_info *ti,
                           const struct tpl_draft *d, int64_t *ret_number)
{
    struct store *s = ctx->store;
    struct buf details;
    int64_t number = 0;
    int answered = 0;
    struct store_version v = {
        .template_name = ti->name,
        .source = d->source->str,
        .language = d->lang,
        .input_schema = d->schema_text.data,
        .functions = d->funcs.data,
        .autonomy = d->mode,
        .limits = d->lims.data,
        .digest = d->digest,
        .author = ctx->who->name,
        .workspace = d->workspace ? d->workspace_text.data : NULL,
    };
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    buf_init(&details, (size_t)4 << 20);
    enum store_rc rc = s->ops->version_create(s, &v, &number);
    if (rc == STORE_OK && tpl_draft_details(ctx, ti, d, number, &details) != 0) {
        answered = 1;
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = details.data ? api_audit(ctx, "version.create", ti->name, ti->department, details.data)
                          : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    buf_done(&details);
    if (rc == STORE_OK) {
        *ret_number = number;
        return 0;
    }
    if (answered) {
        return -1;
    }
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no template %s", ti->name);
    } else if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "a version of %s was created at the same time", ti->name);
    } else {
        api_store_failed(ctx);
    }
    return -1;
}

void api_versions_create(struct api_ctx *ctx)
{
    struct tpl_info ti;
    struct tpl_draft d;
    int64_t number = 0;
    tpl_draft_init(&d);
    if (tpl_draft_body(ctx, &d) != 0 || tpl_lookup_readable(ctx, &ti) != 0 ||
        tpl_allow_write(ctx, ti.department) != 0 || tpl_draft_check(ctx, &ti, &d) != 0 ||
        tpl_draft_store(ctx, &ti, &d, &number) != 0) {
        goto out;
    }
    tpl_reply_version(ctx, 201, &ti, number, NULL);
out:
    tpl_draft_done(&d);
}

/* What a state move reads of the version it moves, in its transaction. */
struct tpl_state {
    int found;
    struct gov_version v; /* its strings point into the members below */
    char author[STORE_NAME_MAX + 1];
    char digest[72];
    char *workspace; /* its manifest (NULL: none), for an approval's check of its mounts */
    int lost;        /* out of memory copying it */
};

/* The caller sets v.template_name and v.department (the route's template) before the read. */
static int tpl_state_read(void *userdata, const struct store_version *v)
{
    struct tpl_state *st = userdata;
    st->found = 1;
    st->v.number = v->version;
    st->v.state = api_version_state(v->state);
    snprintf(st->author, sizeof st->author, "%s", v->author);
    snprintf(st->digest, sizeof st->digest, "%s", v->digest);
    st->v.author = st->author;
    st->workspace = v->workspace ? buf_dup(v->workspace, strlen(v->workspace)) : NULL;
    st->lost = v->workspace && !st->workspace;
    return 0;
}

/* A state move's request: the version it names and the body's note. */
struct tpl_move_req {
    enum gov_version_action action;
    const char *note_field; /* "comment" or "reason"; NULL: no body */
    const char *note;       /* NULL: none given */
    struct tpl_info ti;
    int64_t number;
};

/* Parses a move: its body, the template as the caller may see it (404), the version number
 * (404). 0, or -1 after answering. The version itself, and the caller's roles, are decided
 * once it is read (gov_version_may_read, gov_version_may_act). */
static int tpl_move_parse(struct api_ctx *ctx, struct tpl_move_req *q)
{
    const struct json_node *note = NULL;
    const char *field = q->note_field ? q->note_field : "";
    const struct api_field fields[] = { { field, JSON_STRING, 0, &note } };
    if (api_body(ctx, fields, q->note_field ? 1 : 0) != 0 ||
        tpl_lookup_readable(ctx, &q->ti) != 0) {
        return -1;
    }
    q->number = tpl_version_number(api_param(ctx, "v"));
    if (q->number == 0) {
        api_error(ctx, 404, "NOT_FOUND", "no version %.32s of template %s", api_param(ctx, "v"),
                  q->ti.name);
        return -1;
    }
    if (note && strlen(note->str) > TPL_COMMENT_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"%s\" is over %u bytes", field,
                  TPL_COMMENT_MAX);
        return -1;
    }
    q->note = note ? note->str : NULL;
    return 0;
}

/* Records the move gov allowed: the conditional state change, its record and, for a
 * revocation, the end of the version's runs. Inside the move's transaction. */
static enum store_rc tpl_move_store(struct api_ctx *ctx, const struct tpl_move_req *q,
                                    const struct tpl_state *cur)
{
    struct store *s = ctx->store;
    const char *from = gov_version_state_name(gov_version_action_from(q->action));
    const char *to = gov_version_state_name(gov_version_action_to(q->action));
    char action[32];
    struct buf details;
    buf_init(&details, 16 * 1024);
    enum store_rc rc =
            s->ops->version_set_state(s, q->ti.name, q->number, from, to, ctx->who->name, q->note);
    api_member(&details, "{\"template\":", q->ti.name);
    buf_printf(&details, ",\"version\":%" PRId64 ",\"digest\":\"%s\",\"from\":\"%s\",\"to\":\"%s\"",
               q->number, cur->digest, from, to);
    if (q->note_field) {
        buf_printf(&details, ",\"%s\":", q->note_field);
        api_member(&details, "", q->note);
    }
    buf_append_str(&details, "}");
    snprintf(action, sizeof action, "version.%s", gov_version_action_name(q->action));
    if (rc == STORE_OK) {
        rc = details.data ? api_audit(ctx, action, q->ti.name, q->ti.department, details.data)
                          : STORE_ERROR;
    }
    if (rc == STORE_OK && (q->action == GOV_VERSION_SUBMIT || q->action == GOV_VERSION_APPROVE)) {
        rc = webhooks_version(s,
                              q->action == GOV_VERSION_SUBMIT ? WEBHOOKS_VERSION_SUBMITTED
                                                              : WEBHOOKS_VERSION_APPROVED,
                              q->ti.name, q->number, q->ti.department, ctx->who->name);
    }
    if (rc == STORE_OK && q->action == GOV_VERSION_REVOKE) {
        /* its waiting and running runs end cancelled in the same transaction */
        rc = api_version_revoking(ctx, q->ti.name, q->number);
    }
    buf_done(&details);
    return rc;
}

/* Answers a move's failed transaction (rolled back). */
static void tpl_move_failed(struct api_ctx *ctx, const struct tpl_move_req *q,
                            const struct tpl_state *cur, enum store_rc rc)
{
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no version %" PRId64 " of template %s", q->number,
                  q->ti.name);
    } else if (rc == STORE_CONFLICT) {
        /* moved by another transaction between the read and the change */
        api_error(ctx, 409, "CONFLICT", "version %" PRId64 " of %s is %s, not %s", q->number,
                  q->ti.name, cur->found ? gov_version_state_name(cur->v.state) : "changing",
                  gov_version_state_name(gov_version_action_from(q->action)));
    } else {
        api_store_failed(ctx);
    }
}

/* A submitted version's replay, started once the submission has committed. */
struct tpl_replay_start {
    struct replays *replays;
    char department[STORE_NAME_MAX + 1];
    char template_name[STORE_NAME_MAX + 1];
    int64_t version;
};

static void tpl_replay_after(void *arg, int committed)
{
    struct tpl_replay_start *rs = arg;
    if (committed) {
        replays_start(rs->replays, rs->department, rs->template_name, rs->version);
    }
    free(rs);
}

/* Once the submission of version `number` has committed, its replay starts (replays.h). A
 * replay that cannot be queued now (out of memory) starts when it is first asked for. */
static void tpl_replay_on_submit(struct api_ctx *ctx, const struct tpl_info *ti, int64_t number)
{
    struct tpl_replay_start *rs = ctx->svc && ctx->svc->replays ? calloc(1, sizeof *rs) : NULL;
    if (!rs) {
        return;
    }
    rs->replays = ctx->svc->replays;
    snprintf(rs->department, sizeof rs->department, "%s", ti->department);
    snprintf(rs->template_name, sizeof rs->template_name, "%s", ti->name);
    rs->version = number;
    api_after_commit(ctx->tx, tpl_replay_after, rs);
}

/* One state move of a version (gov_version_may_act: roles, four eyes, the state it leaves). */
static void tpl_move(struct api_ctx *ctx, enum gov_version_action action, const char *note_field)
{
    struct store *s = ctx->store;
    struct tpl_move_req q = { action, note_field, NULL, { 0 }, 0 };
    struct tpl_state cur;
    struct gov_decision d;
    memset(&cur, 0, sizeof cur);
    if (tpl_move_parse(ctx, &q) != 0) {
        return;
    }
    cur.v.template_name = q.ti.name;
    cur.v.department = q.ti.department;
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    enum store_rc rc = s->ops->version_get(s, q.ti.name, q.number, tpl_state_read, &cur);
    if (rc == STORE_OK && !cur.found) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK && cur.lost) {
        rc = STORE_ERROR;
    }
    /* a version the caller may not read is not there; then its roles, four eyes, the state */
    if (rc == STORE_OK && (!gov_version_may_read(&ctx->who->gov, &cur.v, &d) ||
                           !gov_version_may_act(&ctx->who->gov, &cur.v, action, &d))) {
        s->ops->tx_rollback(s);
        api_decision(ctx, &d);
        goto out;
    }
    /* what is approved names mounts that exist: a mount deleted while the version was a draft
     * is found here, not by its first run */
    if (rc == STORE_OK && action == GOV_VERSION_APPROVE && cur.workspace &&
        api_workspace_mounts_ready(ctx, cur.workspace, q.ti.department) != 0) {
        s->ops->tx_rollback(s);
        goto out;
    }
    if (rc == STORE_OK) {
        rc = tpl_move_store(ctx, &q, &cur);
    }
    rc = api_tx_end(s, rc);
    if (rc != STORE_OK) {
        tpl_move_failed(ctx, &q, &cur, rc);
        goto out;
    }
    if (action == GOV_VERSION_REVOKE) {
        api_version_revoked(ctx, q.ti.name, q.number);
    }
    if (action == GOV_VERSION_SUBMIT) {
        tpl_replay_on_submit(ctx, &q.ti, q.number);
    }
    tpl_reply_version(ctx, 200, &q.ti, q.number, NULL);
out:
    free(cur.workspace);
}

void api_versions_submit(struct api_ctx *ctx)
{
    tpl_move(ctx, GOV_VERSION_SUBMIT, NULL);
}

void api_versions_approve(struct api_ctx *ctx)
{
    tpl_move(ctx, GOV_VERSION_APPROVE, "comment");
}

void api_versions_reject(struct api_ctx *ctx)
{
    tpl_move(ctx, GOV_VERSION_REJECT, "comment");
}

void api_versions_revoke(struct api_ctx *ctx)
{
    tpl_move(ctx, GOV_VERSION_REVOKE, "reason");
}

/* ---------------------------------------------------------------- reading versions */

void api_versions_get(struct api_ctx *ctx)
{
    struct tpl_info ti;
    if (tpl_read_route(ctx, &ti) == 0) {
        tpl_reply_version(ctx, 200, &ti, tpl_version_number(api_param(ctx, "v")), &ctx->who->gov);
    }
}

/* ---------------------------------------------------------------- replay */

/* What GET .../replay reads: the version as the caller may read it, and its kept replay. */
struct tpl_replay {
    const struct gov_principal *reader;
    int found;
    enum gov_version_state state;
    struct buf *b; /* the kept replay's object, when there is one */
    int kept;
    int64_t number;
    int64_t newer; /* a newer version of the template that is submitted; 0: none */
};

static int tpl_replay_newer(void *userdata, const struct store_version *v)
{
    struct tpl_replay *t = userdata;
    if (v->version > t->number && api_version_state(v->state) == GOV_VERSION_SUBMITTED) {
        t->newer = v->version;
    }
    return 0;
}

static int tpl_replay_version_read(void *userdata, const struct store_version *v)
{
    struct tpl_replay *t = userdata;
    t->found = tpl_readable(t->reader, v);
    t->state = api_version_state(v->state);
    return 0;
}

static int tpl_replay_read(void *userdata, const struct store_replay *r)
{
    struct tpl_replay *t = userdata;
    t->kept = 1;
    buf_append_str(t->b, r->result);
    buf_append_str(t->b, "\n");
    return 0;
}

/* GET /v1/templates/{t}/versions/{v}/replay (docs/server.md "Replay before approval"): the kept
 * replay; for a submitted version whose replay is still under way (or was lost with a stopped
 * airlockd), the request waits for it (replays_wait); a version never submitted, or one that was
 * decided before any replay was kept, has none ("state":"none", nothing replayed), and a
 * submitted one with a newer submitted version is not replayed ("state":"superseded"). */
void api_versions_replay(struct api_ctx *ctx)
{
    struct tpl_info ti;
    struct tpl_replay t = { &ctx->who->gov, 0, GOV_VERSION_DRAFT, &ctx->resp->body, 0, 0, 0 };
    struct store *s = ctx->store;
    if (tpl_read_route(ctx, &ti) != 0) {
        return;
    }
    int64_t number = tpl_version_number(api_param(ctx, "v"));
    enum store_rc rc = number ? s->ops->version_get(s, ti.name, number, tpl_replay_version_read, &t)
                              : STORE_NOT_FOUND;
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !t.found)) {
        api_error(ctx, 404, "NOT_FOUND", "no version %.32s of template %s", api_param(ctx, "v"),
                  ti.name);
        return;
    }
    /* it names runs: only who sees the department's runs reads it (not an agent) */
    if (rc == STORE_OK && api_allow(ctx, ti.department) != 0) {
        return;
    }
    api_reply(ctx, 200);
    if (rc == STORE_OK) {
        rc = s->ops->replay_get(s, ti.name, number, tpl_replay_read, &t);
    }
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(ctx);
        return;
    }
    if (t.kept) {
        return;
    }
    t.number = number;
    if (t.state == GOV_VERSION_SUBMITTED &&
        s->ops->version_list(s, ti.name, tpl_replay_newer, &t) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    if (t.state == GOV_VERSION_SUBMITTED && !t.newer && ctx->svc && ctx->svc->replays) {
        struct http_deferred *d = http_defer(ctx->req, ctx->resp);
        if (d) {
            replays_wait(ctx->svc->replays, ti.department, ti.name, number, d);
            return;
        }
    }
    replays_put_empty(&ctx->resp->body, ti.name, number, t.newer ? "superseded" : "none");
}

/* ---------------------------------------------------------------- types */

/* One connector's function definitions (a JSON object), kept for the answer. */
static int tpl_types_conn_read(void *userdata, const struct store_connector *c)
{
    char **functions = userdata;
    *functions = buf_dup(c->functions, strlen(c->functions));
    return 0;
}

static int tpl_types_cmp(const void *a, const void *b)
{
    return strcmp(((const struct tsdecl_fn *)a)->name, ((const struct tsdecl_fn *)b)->name);
}

/* A version's functions as tsdecl declares them, each with its connector's definition. */
struct tpl_decls {
    size_t n;
    struct tsdecl_fn fns[TPL_FUNCS_MAX];
    struct json_doc *cdocs[TPL_FUNCS_MAX];
    char *ctexts[TPL_FUNCS_MAX]; /* a doc points into its text */
};

static void tpl_decls_done(struct tpl_decls *d)
{
    for (size_t i = 0; i < TPL_FUNCS_MAX; i++) {
        json_doc_free(d->cdocs[i]);
        free(d->ctexts[i]);
    }
}

/* Reads each function's definition at its connector (stored versions name existing ones),
 * sorted by name. */
static void tpl_decls_read(struct store *s, const struct json_node *functions, struct tpl_decls *d)
{
    for (const struct json_node *f = functions->child; f && d->n < TPL_FUNCS_MAX; f = f->next) {
        if (f->type != JSON_STRING) {
            continue;
        }
        const char *dot = strchr(f->str, '.');
        char conn[STORE_NAME_MAX + 1];
        snprintf(conn, sizeof conn, "%.*s", dot ? (int)(dot - f->str) : 0, f->str);
        char *text = NULL;
        const struct json_node *def = NULL;
        if (dot && s->ops->connector_get(s, conn, tpl_types_conn_read, &text) == STORE_OK && text &&
            json_parse(text, strlen(text), 64, &d->cdocs[d->n], NULL) == AL_OK) {
            def = json_get(json_root(d->cdocs[d->n]), dot + 1);
        }
        d->ctexts[d->n] = text;
        int obj = def && def->type == JSON_OBJECT;
        const struct json_node *desc = obj ? json_get(def, "description") : NULL;
        const struct json_node *sens = obj ? json_get(def, "sensitive") : NULL;
        d->fns[d->n] = (struct tsdecl_fn){
            .name = f->str,
            .description = desc && desc->type == JSON_STRING ? desc->str : NULL,
            .args = obj ? json_get(def, "args_schema") : NULL,
            .result = obj ? json_get(def, "result_schema") : NULL,
            .sensitive = sens && sens->type == JSON_TRUE,
        };
        d->n++;
    }
    qsort(d->fns, d->n, sizeof d->fns[0], tpl_types_cmp);
}

void api_versions_types(struct api_ctx *ctx)
{
    struct tpl_info ti;
    struct tpl_copy t;
    struct json_doc *fdoc = NULL;
    struct json_doc *idoc = NULL;
    struct tpl_decls decls;
    char title[2 * STORE_NAME_MAX + 64];
    memset(&t, 0, sizeof t);
    memset(&decls, 0, sizeof decls);
    if (tpl_read_route(ctx, &ti) != 0) {
        goto out;
    }
    int64_t number = tpl_version_number(api_param(ctx, "v"));
    t.reader = &ctx->who->gov;
    if (tpl_copy_get(ctx, &ti, number, &t) != 0) {
        goto out;
    }
    if (json_parse(t.functions, strlen(t.functions), 4, &fdoc, NULL) != AL_OK ||
        json_parse(t.input_schema, strlen(t.input_schema), 64, &idoc, NULL) != AL_OK) {
        api_store_failed(ctx);
        goto out;
    }
    tpl_decls_read(ctx->store, json_root(fdoc), &decls);
    snprintf(title, sizeof title, "template %s version %" PRId64, ti.name, number);
    api_reply(ctx, 200);
    ctx->resp->content_type = "text/plain; charset=utf-8";
    if (tsdecl_write(&ctx->resp->body, title, decls.fns, decls.n, json_root(idoc)) != BUF_OK) {
        api_error(ctx, 500, "INTERNAL", "the declarations could not be written");
    }
out:
    tpl_decls_done(&decls);
    json_doc_free(fdoc);
    json_doc_free(idoc);
    tpl_copy_done(&t);
}

struct tpl_base {
    int64_t below;
    int64_t found;
};

static int tpl_base_read(void *userdata, const struct store_version *v)
{
    struct tpl_base *b = userdata;
    if (v->version < b->below && api_version_state(v->state) == GOV_VERSION_APPROVED) {
        b->found = v->version;
    }
    return 0;
}

/* Appends ,"key":{"from":A,"to":B} for two strings (from NULL: null). */
static void tpl_change(struct buf *b, const char *key, const char *from, const char *to)
{
    buf_printf(b, ",\"%s\":", key);
    api_member(b, "{\"from\":", from);
    api_member(b, ",\"to\":", to);
    buf_append_str(b, "}");
}

/* Appends the names of `arr` (a JSON array text) not in `other` as a JSON array. */
static void tpl_missing(struct buf *b, const struct json_node *arr, const struct json_node *other)
{
    int n = 0;
    buf_append_str(b, "[");
    for (const struct json_node *f = arr ? arr->child : NULL; f; f = f->next) {
        int seen = 0;
        for (const struct json_node *g = other ? other->child : NULL; g && !seen; g = g->next) {
            seen = g->str_len == f->str_len && memcmp(g->str, f->str, f->str_len) == 0;
        }
        if (!seen) {
            buf_append_str(b, n++ ? "," : "");
            api_str(b, f->str);
        }
    }
    buf_append_str(b, "]");
}

/* The "changes" object between base (NULL: nothing) and v. -1 on a stored value that is not
 * JSON (never written by this file). */
static int tpl_changes(struct buf *b, const struct tpl_copy *base, const struct tpl_copy *v)
{
    struct json_doc *fa = NULL;
    struct json_doc *fb = NULL;
    struct json_doc *la = NULL;
    struct json_doc *lb = NULL;
    struct al_error err;
    int rc = -1;
    int n = 0;
    const char *base_funcs = base ? base->functions : "[]";
    const char *base_limits = base ? base->limits : "{}";
    if (json_parse(base_funcs, strlen(base_funcs), 4, &fa, &err) != AL_OK ||
        json_parse(v->functions, strlen(v->functions), 4, &fb, &err) != AL_OK ||
        json_parse(base_limits, strlen(base_limits), 4, &la, &err) != AL_OK ||
        json_parse(v->limits, strlen(v->limits), 4, &lb, &err) != AL_OK) {
        goto out;
    }
    buf_append_str(b, "{\"functions\":{\"added\":");
    tpl_missing(b, json_root(fb), json_root(fa));
    buf_append_str(b, ",\"removed\":");
    tpl_missing(b, json_root(fa), json_root(fb));
    buf_append_str(b, "},\"limits\":{");
    for (size_t i = 0; i < TPL_NLIMITS; i++) {
        const struct json_node *x = json_get(json_root(la), tpl_limits[i].name);
        const struct json_node *y = json_get(json_root(lb), tpl_limits[i].name);
        if ((x || y) && (!x || !y || x->num != y->num)) {
            buf_printf(b, "%s\"%s\":{\"from\":", n++ ? "," : "", tpl_limits[i].name);
            buf_append(b, x ? x->raw : "null", x ? x->raw_len : 4);
            buf_append_str(b, ",\"to\":");
            buf_append(b, y ? y->raw : "null", y ? y->raw_len : 4);
            buf_append_str(b, "}");
        }
    }
    int changed = !base || strcmp(base->input_schema, v->input_schema) != 0;
    buf_printf(b, "},\"input_schema\":{\"changed\":%s", changed ? "true" : "false");
    if (changed) {
        buf_printf(b, ",\"from\":%s,\"to\":%s", base ? base->input_schema : "null",
                   v->input_schema);
    }
    buf_append_str(b, "}");
    const char *base_ws = base ? base->workspace : NULL;
    changed = (base_ws == NULL) != (v->workspace == NULL) ||
              (base_ws && strcmp(base_ws, v->workspace) != 0);
    buf_printf(b, ",\"workspace\":{\"changed\":%s", changed ? "true" : "false");
    if (changed) {
        buf_printf(b, ",\"from\":%s,\"to\":%s", base_ws ? base_ws : "null",
                   v->workspace ? v->workspace : "null");
    }
    buf_append_str(b, "}");
    if (!base || strcmp(base->autonomy, v->autonomy) != 0) {
        tpl_change(b, "autonomy", base ? base->autonomy : NULL, v->autonomy);
    }
    if (!base || strcmp(base->language, v->language) != 0) {
        tpl_change(b, "language", base ? base->language : NULL, v->language);
    }
    buf_append_str(b, "}");
    rc = 0;
out:
    json_doc_free(fa);
    json_doc_free(fb);
    json_doc_free(la);
    json_doc_free(lb);
    return rc;
}

/* The ?from= of a diff: 0 when absent (the newest approved version before), else a version
 * number; -1 after answering 400. */
static int64_t tpl_diff_from(struct api_ctx *ctx)
{
    const char *text = http_query(ctx->req, "from");
    int64_t from = text ? tpl_version_number(text) : 0;
    if (text && from == 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "query argument from must be a version number (1, 2, ...)");
        return -1;
    }
    return from;
}

/* Reads version `number` into v and the one to diff from into base (*from: the one asked for,
 * or 0 for the newest approved version before number - none: 0 stays), each only when the
 * caller may read it. 0, or -1 after answering. */
static int tpl_diff_read(struct api_ctx *ctx, const struct tpl_info *ti, int64_t number,
                         int64_t *from, struct tpl_copy *v, struct tpl_copy *base)
{
    struct store *s = ctx->store;
    enum store_rc rc = STORE_OK;
    if (tpl_copy_get(ctx, ti, number, v) != 0) {
        return -1;
    }
    if (!*from) {
        struct tpl_base tb = { number, 0 };
        rc = s->ops->version_list(s, ti->name, tpl_base_read, &tb);
        *from = tb.found;
    }
    if (rc == STORE_OK && *from) {
        rc = s->ops->version_get(s, ti->name, *from, tpl_copy_read, base);
        if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !base->found)) {
            api_error(ctx, 404, "NOT_FOUND", "no version %" PRId64 " of template %s to diff from",
                      *from, ti->name);
            return -1;
        }
    }
    if (rc != STORE_OK || (*from && !tpl_copy_ok(base))) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

/* Answers the diff of base (from; 0: none) to v (number). */
static void tpl_diff_reply(struct api_ctx *ctx, const struct tpl_info *ti, int64_t number,
                           int64_t from, const struct tpl_copy *v, const struct tpl_copy *base)
{
    struct buf diff;
    struct al_error err;
    char la[STORE_NAME_MAX + 32];
    char lb[STORE_NAME_MAX + 32];
    struct buf *b = &ctx->resp->body;
    buf_init(&diff, TPL_DIFF_MAX);
    snprintf(la, sizeof la, "%s v%" PRId64, ti->name, from);
    snprintf(lb, sizeof lb, "%s v%" PRId64, ti->name, number);
    memset(&err, 0, sizeof err);
    enum al_code code = diff_unified(from ? base->source : "", from ? strlen(base->source) : 0,
                                     v->source, strlen(v->source), la, lb, &diff, &err);
    if (code != AL_OK) {
        api_error(ctx, code == AL_OUTPUT_LIMIT ? 400 : 500,
                  code == AL_OUTPUT_LIMIT ? "INVALID_REQUEST" : "INTERNAL", "diff: %s",
                  err.message);
        goto out;
    }
    api_reply(ctx, 200);
    api_member(b, "{\"template\":", ti->name);
    buf_printf(b, ",\"version\":%" PRId64 ",\"from\":", number);
    if (from) {
        buf_printf(b, "%" PRId64, from);
    } else {
        buf_append_str(b, "null");
    }
    buf_append_str(b, ",\"source_diff\":");
    json_write_string(b, diff.data ? diff.data : "", diff.len);
    buf_append_str(b, ",\"changes\":");
    if (tpl_changes(b, from ? base : NULL, v) != 0) {
        api_error(ctx, 500, "INTERNAL", "a stored version is not JSON");
        goto out;
    }
    buf_append_str(b, "}\n");
out:
    buf_done(&diff);
}

void api_versions_diff(struct api_ctx *ctx)
{
    struct tpl_info ti;
    struct tpl_copy v;
    struct tpl_copy base;
    memset(&v, 0, sizeof v);
    memset(&base, 0, sizeof base);
    v.reader = base.reader = &ctx->who->gov;
    if (tpl_read_route(ctx, &ti) != 0) {
        goto out;
    }
    int64_t number = tpl_version_number(api_param(ctx, "v"));
    int64_t from = tpl_diff_from(ctx);
    if (from < 0 || tpl_diff_read(ctx, &ti, number, &from, &v, &base) != 0) {
        goto out;
    }
    tpl_diff_reply(ctx, &ti, number, from, &v, &base);
out:
    tpl_copy_done(&v);
    tpl_copy_done(&base);
}
