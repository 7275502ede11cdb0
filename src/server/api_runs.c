/*
 * api_runs.c - POST /v1/runs and what follows it: only approved versions run, the input is
 * validated against the version's schema before anything executes, the guest gets exactly the
 * version's functions (each bound to its connector, which must belong to the same department),
 * and the effective autonomy is the stricter of the version's and the department's. The run's
 * row and its start record are committed before the run starts; its end is recorded by the
 * run writer (runs.c) before the waiting client is answered.
 *
 * api_run_plan turns a run's row into what runs.c executes; the resume of an approved run and
 * the start of a supervised one go through it as well, so a run always executes exactly what
 * its row names.
 *
 * Who may start, see and cancel a run is src/gov's decision (gov_run_may_start, _may_see,
 * _may_cancel), taken per run: an agent of a department sees its own runs there and no other
 * agent's, whatever roles it holds in other departments; GET /v1/runs, GET /v1/runs/{id},
 * cancel and MCP's get_run ask the same question.
 */
#include "api_runs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "connector.h"
#include "error.h"
#include "runs.h"
#include "schema.h"
#include "webhooks.h"

#define API_RUNS_LIST_MAX   1000
#define API_RUNS_PAGE_BYTES ((size_t)48 << 20)  /* a list answer stays under the body cap */
#define API_ADHOC_AUDIT_MAX ((size_t)512 << 10) /* an ad-hoc source as its record holds it */

static const struct {
    const char *name;
    enum al_limit which;
} api_limit_names[] = {
    { "timeout_ms", AL_LIMIT_TIMEOUT_MS },     { "cpu_ms", AL_LIMIT_CPU_MS },
    { "memory_bytes", AL_LIMIT_MEMORY_BYTES }, { "output_bytes", AL_LIMIT_RESULT_BYTES },
    { "host_calls", AL_LIMIT_HOST_CALLS },
};

/* ---------------------------------------------------------------- the plan */

void api_run_copy_done(struct api_run_copy *c)
{
    for (size_t i = 0; i < sizeof c->strings / sizeof c->strings[0]; i++) {
        free(c->strings[i]);
    }
    memset(c, 0, sizeof *c);
}

int api_run_copy_set(struct api_run_copy *c, const struct store_run *row)
{
    const char **str[] = { &c->row.id,        &c->row.template_name, &c->row.department,
                           &c->row.principal, &c->row.status,        &c->row.input,
                           &c->row.source,    &c->row.language,      &c->row.functions,
                           &c->row.created,   &c->row.seed,          &c->row.forked_from };
    int failed = 0;
    c->row = *row;
    c->row.outcome = NULL;
    c->row.updated = NULL;
    for (size_t i = 0; i < sizeof str / sizeof str[0]; i++) {
        c->strings[i] = *str[i] ? strdup(*str[i]) : NULL;
        failed |= *str[i] && !c->strings[i];
        *str[i] = c->strings[i];
    }
    if (failed) {
        api_run_copy_done(c);
        return -1;
    }
    return 0;
}

struct api_version_copy {
    int64_t version;
    char department[STORE_NAME_MAX + 1];
    char state[16];
    char language[8];
    char autonomy[16];
    char approved_by[STORE_NAME_MAX + 1];
    char digest[80];
    char *source;
    char *input_schema;
    char *functions;
    char *limits;
    char *workspace; /* NULL: the version has none */
    int lost;        /* it has one, not copied (out of memory) */
};

static void api_version_copy_done(struct api_version_copy *v)
{
    free(v->workspace);
    free(v->source);
    free(v->input_schema);
    free(v->functions);
    free(v->limits);
    memset(v, 0, sizeof *v);
}

static int api_version_copy_fn(void *userdata, const struct store_version *sv)
{
    struct api_version_copy *v = userdata;
    v->version = sv->version;
    snprintf(v->department, sizeof v->department, "%s", sv->department);
    snprintf(v->state, sizeof v->state, "%s", sv->state);
    snprintf(v->language, sizeof v->language, "%s", sv->language ? sv->language : "js");
    snprintf(v->autonomy, sizeof v->autonomy, "%s", sv->autonomy ? sv->autonomy : "autonomous");
    snprintf(v->approved_by, sizeof v->approved_by, "%s", sv->approved_by ? sv->approved_by : "");
    snprintf(v->digest, sizeof v->digest, "%s", sv->digest ? sv->digest : "");
    v->source = strdup(sv->source ? sv->source : "");
    v->input_schema = strdup(sv->input_schema ? sv->input_schema : "true");
    v->functions = strdup(sv->functions ? sv->functions : "[]");
    v->limits = strdup(sv->limits ? sv->limits : "{}");
    v->workspace = sv->workspace ? strdup(sv->workspace) : NULL;
    v->lost |= sv->workspace && !v->workspace;
    return 0;
}

/* Reads a version; STORE_NOT_FOUND when there is none. */
static enum store_rc api_version_read(struct store *s, const char *template_name, int64_t version,
                                      struct api_version_copy *ret)
{
    memset(ret, 0, sizeof *ret);
    enum store_rc rc = s->ops->version_get(s, template_name, version, api_version_copy_fn, ret);
    if (rc == STORE_OK &&
        (!ret->source || !ret->input_schema || !ret->functions || !ret->limits || ret->lost)) {
        api_version_copy_done(ret);
        return STORE_ERROR;
    }
    return rc;
}

static int api_plan_limits(struct runs_plan *plan, const char *limits_json, struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    if (json_parse(limits_json, strlen(limits_json), 4, &doc, &jerr) != AL_OK) {
        error_set(reterr, AL_CONFIG_ERROR, "the version's limits are not JSON");
        return -1;
    }
    const struct json_node *root = json_root(doc);
    for (const struct json_node *m = root->type == JSON_OBJECT ? root->child : NULL; m;
         m = m->next) {
        for (size_t i = 0; i < sizeof api_limit_names / sizeof api_limit_names[0]; i++) {
            if (strcmp(m->key, api_limit_names[i].name) == 0 && m->type == JSON_NUMBER &&
                m->num >= 1 && plan->nlimits < RUNS_LIMITS_MAX) {
                plan->limit_which[plan->nlimits] = api_limit_names[i].which;
                plan->limit_value[plan->nlimits] = (uint64_t)m->num;
                plan->nlimits++;
            }
        }
    }
    json_doc_free(doc);
    return 0;
}

/* A connector's department, to check that a run only reaches its own department's. */
static int api_connector_department(void *userdata, const struct store_connector *c)
{
    snprintf(userdata, STORE_NAME_MAX + 1, "%s", c->department);
    return 0;
}

/* Binds every "connector.fn" of the JSON array to its connector. */
static int api_plan_functions(struct store *s, struct secretbox_keys *secret_keys,
                              struct runs_plan *plan, const char *functions_json,
                              struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    int ret = -1;
    if (json_parse(functions_json, strlen(functions_json), 4, &doc, &jerr) != AL_OK) {
        error_set(reterr, AL_CONFIG_ERROR, "the functions are not JSON");
        return -1;
    }
    const struct json_node *root = json_root(doc);
    size_t n = root->type == JSON_ARRAY ? root->count : 0;
    plan->functions = calloc(n ? n : 1, sizeof *plan->functions);
    plan->targets = calloc(n ? n : 1, sizeof *plan->targets);
    if (!plan->functions || !plan->targets) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    for (const struct json_node *e = n ? root->child : NULL; e; e = e->next) {
        struct runs_function *f = &plan->functions[plan->nfunctions];
        const char *dot = e->type == JSON_STRING ? strchr(e->str, '.') : NULL;
        if (!dot || (size_t)(dot - e->str) > STORE_NAME_MAX || e->str_len >= sizeof f->name) {
            error_set(reterr, AL_CONFIG_ERROR, "function %.64s is not connector.function",
                      e->str ? e->str : "?");
            goto out;
        }
        snprintf(f->name, sizeof f->name, "%s", e->str);
        memcpy(f->connector, e->str, (size_t)(dot - e->str));
        f->connector[dot - e->str] = '\0';
        f->fn = f->name + (dot - e->str) + 1;
        const struct connector_target *target = NULL;
        for (size_t i = 0; i < plan->nfunctions; i++) {
            if (strcmp(plan->functions[i].connector, f->connector) == 0) {
                target = plan->functions[i].target;
            }
        }
        if (!target) {
            char dept[STORE_NAME_MAX + 1] = "";
            struct al_error cerr;
            struct connector_target *t = NULL;
            if (s->ops->connector_get(s, f->connector, api_connector_department, dept) !=
                        STORE_OK ||
                strcmp(dept, plan->department) != 0) {
                error_set(reterr, AL_CONFIG_ERROR,
                          "connector %s is not registered in department %s", f->connector,
                          plan->department);
                goto out;
            }
            memset(&cerr, 0, sizeof cerr);
            if (connector_target_load(s, secret_keys, f->connector, &t, &cerr) != 0) {
                /* a connector deleted since the check above (1) sets no detail */
                error_set(reterr, cerr.code != AL_OK ? cerr.code : AL_CONFIG_ERROR,
                          "connector %s cannot be used: %.160s", f->connector, cerr.message);
                goto out;
            }
            plan->targets[plan->ntargets++] = t;
            target = t;
        }
        f->target = target;
        if (connector_function_flags(target, f->fn, &f->sensitive, &f->idempotent) != 0) {
            error_set(reterr, AL_CONFIG_ERROR, "connector %s has no function %s", f->connector,
                      f->fn);
            goto out;
        }
        plan->nfunctions++;
    }
    ret = 0;
out:
    json_doc_free(doc);
    return ret;
}

enum store_rc api_run_plan(struct store *s, struct secretbox_keys *secret_keys,
                           const struct mounts_roots *roots, const struct store_run *row,
                           struct runs_plan **ret_plan, struct al_error *reterr)
{
    struct api_version_copy v;
    enum store_rc rc = STORE_OK;
    struct runs_plan *plan = calloc(1, sizeof *plan);
    memset(&v, 0, sizeof v);
    if (!plan) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return STORE_ERROR;
    }
    snprintf(plan->id, sizeof plan->id, "%s", row->id);
    snprintf(plan->department, sizeof plan->department, "%s", row->department);
    snprintf(plan->principal, sizeof plan->principal, "%s", row->principal);
    plan->input_json = strdup(row->input);
    const char *functions = row->functions ? row->functions : "[]";
    const char *limits = "{}";
    if (row->template_name[0]) {
        snprintf(plan->template_name, sizeof plan->template_name, "%s", row->template_name);
        plan->version = row->version;
        rc = api_version_read(s, row->template_name, row->version, &v);
        if (rc != STORE_OK) {
            error_set(reterr, AL_INTERNAL_ERROR, "template %s version %" PRId64 " cannot be read",
                      row->template_name, row->version);
            goto out;
        }
        if (api_version_state(v.state) != GOV_VERSION_APPROVED) {
            error_set(reterr, AL_CONFIG_ERROR,
                      "template %s version %" PRId64 " is %s, not approved", row->template_name,
                      row->version, v.state);
            rc = STORE_CONFLICT;
            goto out;
        }
        snprintf(plan->approved_by, sizeof plan->approved_by, "%s", v.approved_by);
        plan->source = strdup(v.source);
        plan->typescript = strcmp(v.language, "ts") == 0;
        functions = v.functions;
        limits = v.limits;
    } else {
        plan->source = strdup(row->source ? row->source : "");
        plan->typescript = row->language && strcmp(row->language, "ts") == 0;
    }
    if (!plan->source || !plan->input_json) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        rc = STORE_ERROR;
        goto out;
    }
    if (api_plan_limits(plan, limits, reterr) != 0 ||
        api_plan_functions(s, secret_keys, plan, functions, reterr) != 0) {
        rc = STORE_CONFLICT;
        goto out;
    }
    /* a new run has no row yet: its workspace comes from the request (api_run_submit) */
    rc = api_run_workspace_plan(s, row->id, plan);
    if (rc != STORE_OK) {
        error_set(reterr, AL_INTERNAL_ERROR, "the workspace of run %s cannot be read", row->id);
    } else if (plan->workspace_manifest) {
        rc = api_run_workspace_mounts(s, secret_keys, roots, plan, reterr);
    }
out:
    api_version_copy_done(&v);
    if (rc != STORE_OK) {
        runs_plan_free(plan);
        return rc;
    }
    *ret_plan = plan;
    return STORE_OK;
}

/* The limit `which` of plan as the runner applies it: its own value, else the runner's default
 * (airlockd sets none of its own). */
static uint64_t api_replay_limit_of(const struct runs_plan *plan, enum al_limit which)
{
    for (size_t i = 0; i < plan->nlimits; i++) {
        if (plan->limit_which[i] == which) {
            return plan->limit_value[i];
        }
    }
    return al_limit_default(which);
}

int api_replay_plan(const struct store_run *row, const struct store_version *v,
                    const char *against_limits, struct runs_plan **ret_plan,
                    struct al_error *reterr)
{
    struct runs_plan against;
    struct json_doc *doc = NULL;
    struct al_error jerr;
    struct runs_plan *plan = calloc(1, sizeof *plan);
    char *end = NULL;
    int ret = -1;
    if (!plan) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    snprintf(plan->id, sizeof plan->id, "%s", row->id);
    snprintf(plan->template_name, sizeof plan->template_name, "%s", v->template_name);
    plan->version = v->version;
    snprintf(plan->department, sizeof plan->department, "%s", row->department);
    snprintf(plan->principal, sizeof plan->principal, "%s", row->principal);
    plan->input_json = strdup(row->input);
    plan->source = strdup(v->source);
    plan->typescript = strcmp(v->language, "ts") == 0;
    plan->has_seed = 1;
    plan->seed = row->seed ? strtoull(row->seed, &end, 16) : 0;
    plan->clock_ms = row->clock_ms;
    if (!plan->input_json || !plan->source) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    if (!end || *end || plan->clock_ms <= 0) {
        error_set(reterr, AL_CONFIG_ERROR, "run %s has no recorded start to replay from", row->id);
        goto out;
    }
    /* the stricter of v's limits and those the recorded run ran under, each limit alone: a
     * version not approved never gets more than an approved one had */
    memset(&against, 0, sizeof against);
    if (api_plan_limits(plan, v->limits, reterr) != 0 ||
        api_plan_limits(&against, against_limits ? against_limits : "{}", reterr) != 0) {
        goto out;
    }
    for (size_t i = 0; i < sizeof api_limit_names / sizeof api_limit_names[0]; i++) {
        enum al_limit which = api_limit_names[i].which;
        uint64_t mine = api_replay_limit_of(plan, which);
        uint64_t theirs = api_replay_limit_of(&against, which);
        against.limit_which[i] = which;
        against.limit_value[i] = mine < theirs ? mine : theirs;
    }
    plan->nlimits = sizeof api_limit_names / sizeof api_limit_names[0];
    memcpy(plan->limit_which, against.limit_which, sizeof plan->limit_which);
    memcpy(plan->limit_value, against.limit_value, sizeof plan->limit_value);
    if (json_parse(v->functions, strlen(v->functions), 4, &doc, &jerr) != AL_OK ||
        json_root(doc)->type != JSON_ARRAY) {
        error_set(reterr, AL_CONFIG_ERROR, "the version's functions are not a JSON array");
        goto out;
    }
    size_t n = json_root(doc)->count;
    plan->functions = calloc(n ? n : 1, sizeof *plan->functions);
    if (!plan->functions) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    for (const struct json_node *e = json_root(doc)->child; e; e = e->next) {
        struct runs_function *f = &plan->functions[plan->nfunctions];
        if (e->type != JSON_STRING || e->str_len >= sizeof f->name) {
            error_set(reterr, AL_CONFIG_ERROR, "the version's functions are not names");
            goto out;
        }
        snprintf(f->name, sizeof f->name, "%s", e->str);
        plan->nfunctions++;
    }
    ret = 0;
out:
    json_doc_free(doc);
    if (ret != 0) {
        runs_plan_free(plan);
        return -1;
    }
    *ret_plan = plan;
    return 0;
}

/* ---------------------------------------------------------------- POST /v1/runs */

struct api_dept_policy {
    char autonomy[16];
    int allow_adhoc;
};

static int api_dept_policy_fn(void *userdata, const struct store_department *d)
{
    struct api_dept_policy *p = userdata;
    snprintf(p->autonomy, sizeof p->autonomy, "%s", d->autonomy);
    p->allow_adhoc = d->allow_adhoc;
    return 0;
}

/* A POST /v1/runs request, checked (api_run_parse). */
struct api_run_request {
    const struct json_node *template_name;
    const struct json_node *version;
    const struct json_node *input;
    const struct json_node *wait;
    const struct json_node *source;
    const struct json_node *department;
    const struct json_node *functions;
    const struct json_node *language;
    const struct json_node *workspace;
    int adhoc;
    int64_t asked;        /* the version asked for; 0: the newest approved one */
    char *input_text;     /* the input as a C string, owned */
    char *functions_text; /* an ad-hoc run's functions (a JSON array), owned; NULL otherwise */
    struct api_run_workspace ws; /* resolved from workspace (api_run_workspace_resolve), owned */
};

/* How a new run starts: its effective autonomy (gov_autonomy_effective), the state it is
 * created in and how the run writer takes it. */
struct api_run_mode {
    enum gov_autonomy autonomy;
    int supervised;
    enum gov_run_state state;
    enum runs_start_mode start;
};

/* Answers the run's API object: 200 whatever the run's state, its status says where it is (a
 * new run's answer, 202 while it waits, comes from the run writer). */
static void api_run_reply(struct api_ctx *ctx, const char *id)
{
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 200);
    if (runs_json_by_id(ctx->store, id, b, NULL) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(b, "\n");
}

/* A new run as the writer records it (runs_submit): its row, run.start and, when supervised,
 * its approval of kind run and approval.request. */
struct api_run_start {
    struct api_run_copy run;
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    char key_prefix[AUTH_PREFIX_LEN + 1]; /* the key it was asked with, still valid at its record */
    char route[64];                       /* ... and the request, for a refusal's record */
    char approval[RUNS_ID_LEN + 1];
    char approved_by[STORE_NAME_MAX + 1];
    char digest[80];
    char autonomy[16];
    int adhoc;
    int supervised;
    /* a fork: its original, the call it goes live from, and the original's journal positions
     * it replays (1..fork_upto, 0: none) */
    char forked_from[RUNS_ID_LEN + 1];
    int64_t at_call;
    int64_t fork_upto;
    struct api_run_workspace ws; /* its workspace, for the record (no tar: the plan has it) */
};

static void api_run_start_free(void *userdata)
{
    struct api_run_start *st = userdata;
    if (st) {
        api_run_copy_done(&st->run);
        api_run_workspace_done(&st->ws);
    }
    free(st);
}

/* The start's version, approved when the request was checked, is still approved: a
 * revocation may have come between that and this batch. STORE_CONFLICT with the refusal. */
static enum store_rc api_run_start_approved(struct store *s, const struct api_run_start *st,
                                            struct buf *ret_refusal)
{
    struct api_version_copy v;
    enum store_rc rc = api_version_read(s, st->run.row.template_name, st->run.row.version, &v);
    enum gov_version_state state = api_version_state(v.state);
    api_version_copy_done(&v);
    if ((rc != STORE_OK && rc != STORE_NOT_FOUND) || state == GOV_VERSION_APPROVED) {
        return rc;
    }
    buf_printf(ret_refusal,
               "{\"error\":{\"code\":\"%s\",\"message\":\"template version is %s, not "
               "approved\",\"request_id\":\"%s\"}}\n",
               state == GOV_VERSION_REVOKED ? "TEMPLATE_REVOKED" : "VERSION_NOT_APPROVED",
               v.state[0] ? v.state : "gone", st->request_id);
    return STORE_CONFLICT;
}

/* The key revoked (or its principal's agent role taken back) after the request was checked: the
 * run is refused as the router would have refused it, and the refusal recorded. */
static enum store_rc api_run_start_unauthorized(struct store *s, const struct api_run_start *st,
                                                unsigned status, const char *why,
                                                struct buf *ret_refusal, unsigned *ret_status)
{
    struct buf d;
    buf_init(&d, 4096);
    buf_printf(&d,
               "{\"method\":\"POST\",\"route\":\"%s\",\"path\":\"%s\",\"status\":%u,\"reason\":",
               st->route, st->route, status);
    api_str(&d, why);
    buf_printf(&d, ",\"request_id\":\"%s\"}", st->request_id);
    const char *actor = status == 401 ? "airlockd" : st->run.row.principal;
    enum store_rc rc =
            buf_failed(&d) ? STORE_ERROR
                           : s->ops->audit_append(s, actor, "auth.denied",
                                                  status == 401 ? NULL : actor, NULL, d.data, NULL);
    buf_done(&d);
    if (rc != STORE_OK) {
        return rc;
    }
    *ret_status = status;
    buf_printf(ret_refusal, "{\"error\":{\"code\":\"%s\",\"message\":",
               status == 401 ? "UNAUTHENTICATED" : "FORBIDDEN");
    api_str(ret_refusal, why);
    buf_printf(ret_refusal, ",\"request_id\":\"%s\"}}\n", st->request_id);
    return STORE_CONFLICT;
}

/* Checks the start again on the writer's connection, which sees the keys, grants and versions
 * as they are now: a revocation that came while the request was checked and planned wins.
 * STORE_OK, STORE_CONFLICT with the refusal (recorded when it is one of the key or the role),
 * or the store's failure. */
static enum store_rc api_run_start_recheck(struct store *s, const struct api_run_start *st,
                                           struct buf *ret_refusal, unsigned *ret_status)
{
    const struct store_run *r = &st->run.row;
    enum store_rc krc = auth_key_active(s, st->key_prefix, r->principal);
    if (krc != STORE_OK && krc != STORE_NOT_FOUND) {
        return krc;
    }
    if (krc == STORE_NOT_FOUND) {
        return api_run_start_unauthorized(s, st, 401, "the API key was revoked", ret_refusal,
                                          ret_status);
    }
    struct gov_principal now;
    krc = auth_grants(s, r->principal, &now);
    if (krc != STORE_OK) {
        return krc;
    }
    if (!gov_holds(&now, GOV_ROLE_AGENT, r->department)) {
        char why[STORE_NAME_MAX * 2 + 64];
        snprintf(why, sizeof why, "%s needs role agent in department %s", r->principal,
                 r->department);
        return api_run_start_unauthorized(s, st, 403, why, ret_refusal, ret_status);
    }
    return st->adhoc ? STORE_OK : api_run_start_approved(s, st, ret_refusal);
}

/* A held run's approval of kind run, and its approval.request record (details in d). */
static enum store_rc api_run_start_approval(struct store *s, const struct api_run_start *st,
                                            struct buf *d)
{
    const struct store_run *r = &st->run.row;
    struct store_approval a = {
        .id = st->approval,
        .run = r->id,
        .kind = "run",
        .requested_by = r->principal,
        .department = r->department,
        .template_name = r->template_name,
        .version = r->version,
    };
    enum store_rc rc = s->ops->approval_create(s, &a);
    if (rc == STORE_OK) {
        rc = webhooks_approval_requested(s, st->approval, r->id, r->department, "run", NULL);
    }
    if (rc != STORE_OK) {
        return rc;
    }
    buf_reset(d);
    api_member(d, "{\"run\":", r->id);
    api_member(d, ",\"approval\":", st->approval);
    api_member(d, ",\"kind\":\"run\",\"template\":", r->template_name);
    buf_printf(d, ",\"version\":%" PRId64 ",\"requested_by\":", r->version);
    api_str(d, r->principal);
    buf_append_str(d, "}");
    return d->data ? s->ops->audit_append(s, "airlockd", "approval.request", st->approval,
                                          r->department, d->data, NULL)
                   : STORE_ERROR;
}

static enum store_rc api_run_start_record(struct store *s, void *userdata, struct buf *ret_refusal,
                                          unsigned *ret_status)
{
    const struct api_run_start *st = userdata;
    const struct store_run *r = &st->run.row;
    enum store_rc rc = api_run_start_recheck(s, st, ret_refusal, ret_status);
    if (rc != STORE_OK) {
        return rc;
    }
    struct buf d;
    buf_init(&d, (size_t)96 << 20);
    rc = s->ops->run_create(s, r);
    api_member(&d, "{\"run\":", r->id);
    api_member(&d, ",\"template\":", r->template_name);
    buf_printf(&d, ",\"version\":%" PRId64 ",\"principal\":", r->version);
    api_str(&d, r->principal);
    api_member(&d, ",\"approved_by\":", st->approved_by);
    api_member(&d, ",\"digest\":", st->digest);
    api_member(&d, ",\"autonomy\":", st->autonomy);
    if (rc == STORE_OK && st->forked_from[0]) {
        /* the fork's journal starts as the original's prefix it replays (the answers' bytes
         * shared), so that a fork recovered after a crash replays the same */
        api_member(&d, ",\"forked_from\":", st->forked_from);
        buf_printf(&d, ",\"at_call\":%" PRId64, st->at_call);
        rc = s->ops->run_set_fork(s, r->id, st->forked_from, st->at_call);
        if (rc == STORE_OK && st->fork_upto > 0) {
            rc = s->ops->journal_copy_prefix(s, st->forked_from, r->id, st->fork_upto);
        }
    }
    buf_append_str(&d, ",");
    runs_put_bounded(&d, "input", r->input, strlen(r->input));
    if (st->adhoc) {
        /* an ad-hoc run's whole source is audited */
        api_member(&d, ",\"source\":", r->source);
        api_member(&d, ",\"language\":", r->language);
        buf_append_str(&d, ",\"functions\":");
        json_write_compact(&d, r->functions, strlen(r->functions));
    }
    if (rc == STORE_OK) {
        rc = api_run_workspace_record(s, r->id, &st->ws, &d);
    }
    buf_append_str(&d, "}");
    if (rc == STORE_OK) {
        rc = d.data ? s->ops->audit_append(s, r->principal, "run.start", r->id, r->department,
                                           d.data, NULL)
                    : STORE_ERROR;
    }
    if (rc == STORE_OK && st->supervised) {
        rc = api_run_start_approval(s, st, &d);
    }
    buf_done(&d);
    /* a conflict past the version check is no refusal: the batch must not keep half a run */
    return rc == STORE_CONFLICT ? STORE_ERROR : rc;
}

/* An owned copy of what the writer records of the request's run `row` (of version v, NULL for
 * an ad-hoc run); NULL when out of memory. */
static struct api_run_start *api_run_start_new(const struct api_ctx *ctx,
                                               const struct store_run *row,
                                               const struct api_version_copy *v,
                                               const struct api_run_mode *m, const char *approval)
{
    struct api_run_start *st = calloc(1, sizeof *st);
    if (!st || api_run_copy_set(&st->run, row) != 0) {
        free(st);
        return NULL;
    }
    snprintf(st->request_id, sizeof st->request_id, "%s", ctx->req->request_id);
    snprintf(st->key_prefix, sizeof st->key_prefix, "%s", ctx->who->key_prefix);
    snprintf(st->route, sizeof st->route, "%s", ctx->route ? ctx->route : "");
    snprintf(st->approval, sizeof st->approval, "%s", approval);
    snprintf(st->approved_by, sizeof st->approved_by, "%s", v ? v->approved_by : "");
    snprintf(st->digest, sizeof st->digest, "%s", v ? v->digest : "");
    snprintf(st->autonomy, sizeof st->autonomy, "%s", gov_autonomy_name(m->autonomy));
    st->adhoc = v == NULL;
    st->supervised = m->supervised;
    return st;
}

/* What a template's versions are, when none is approved. */
struct api_versions_seen {
    int n;
    int revoked;
    char department[STORE_NAME_MAX + 1];
};

static int api_versions_seen_fn(void *userdata, const struct store_version *v)
{
    struct api_versions_seen *seen = userdata;
    seen->n++;
    seen->revoked |= api_version_state(v->state) == GOV_VERSION_REVOKED;
    snprintf(seen->department, sizeof seen->department, "%s", v->department);
    return 0;
}

/* Validates input against the version's schema: 0, or -1 after answering. */
static int api_run_check_input(struct api_ctx *ctx, const char *schema_text, const char *input)
{
    struct schema *schema = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (schema_compile(schema_text, strlen(schema_text), &schema, &err) != AL_OK) {
        api_error(ctx, 500, "INTERNAL", "the version's input schema does not compile: %s",
                  err.message);
        return -1;
    }
    enum al_code code = schema_validate(schema, input, strlen(input), &err);
    schema_free(schema);
    if (code == AL_CONFIG_ERROR) {
        api_error(ctx, 422, "INPUT_INVALID", "input %s", err.message);
        return -1;
    }
    if (code != AL_OK) {
        api_error(ctx, 400, "INVALID_REQUEST", "input: %s", err.message);
        return -1;
    }
    return 0;
}

static void api_run_request_done(struct api_run_request *q)
{
    free(q->input_text);
    free(q->functions_text);
    api_run_workspace_done(&q->ws);
}

/* Which of the body's members a kind of run takes: 0, or -1 after answering 400. */
static int api_run_shape(struct api_ctx *ctx, const struct api_run_request *q)
{
    const char *wrong = NULL;
    if (q->adhoc == (q->template_name != NULL)) {
        wrong = "give either \"template\" (a template run) or \"source\" and \"department\" (an "
                "ad-hoc run)";
    } else if (!q->adhoc && (q->department || q->functions || q->language)) {
        wrong = "a template run takes its department, functions and language from the version";
    } else if (q->adhoc && (q->version || !q->department)) {
        wrong = "an ad-hoc run needs \"department\" and takes no \"version\"";
    } else if (q->version &&
               (q->version->num < 1 || q->version->num != (double)(int64_t)q->version->num)) {
        wrong = "field \"version\" must be a positive integer";
    } else if (q->adhoc && q->language && strcmp(q->language->str, "js") != 0 &&
               strcmp(q->language->str, "ts") != 0) {
        wrong = "field \"language\" must be \"js\" or \"ts\"";
    }
    if (wrong) {
        api_error(ctx, 400, "INVALID_REQUEST", "%s", wrong);
        return -1;
    }
    return 0;
}

/* Parses and checks the body: 0, or -1 after answering. */
static int api_run_parse(struct api_ctx *ctx, struct api_run_request *q)
{
    const struct api_field fields[] = {
        { "template", JSON_STRING, 0, &q->template_name },
        { "version", JSON_NUMBER, 0, &q->version },
        { "input", JSON_OBJECT, 0, &q->input },
        { "wait", JSON_TRUE, 0, &q->wait },
        { "source", JSON_STRING, 0, &q->source },
        { "department", JSON_STRING, 0, &q->department },
        { "functions", JSON_ARRAY, 0, &q->functions },
        { "language", JSON_STRING, 0, &q->language },
        { "workspace", JSON_OBJECT, 0, &q->workspace },
    };
    if (api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        return -1;
    }
    q->adhoc = q->source != NULL;
    if (api_run_shape(ctx, q) != 0) {
        return -1;
    }
    q->asked = q->version ? (int64_t)q->version->num : 0;
    q->input_text = q->input ? strndup(q->input->raw, q->input->raw_len) : strdup("{}");
    if (q->adhoc) {
        q->functions_text =
                q->functions ? strndup(q->functions->raw, q->functions->raw_len) : strdup("[]");
    }
    if (!q->input_text || (q->adhoc && !q->functions_text)) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    return 0;
}

/* The newest approved version was asked for and there is none: when the template has versions,
 * answers why (gov_run_may_start: to a caller who may read them, and to its agents when they
 * were revoked) and returns -1; 0 when it has none. */
static int api_run_none_approved(struct api_ctx *ctx, const struct api_run_request *q)
{
    struct api_versions_seen seen;
    struct gov_decision d;
    memset(&seen, 0, sizeof seen);
    enum store_rc rc = ctx->store->ops->version_list(ctx->store, q->template_name->str,
                                                     api_versions_seen_fn, &seen);
    if (rc != STORE_OK || seen.n == 0) {
        return 0;
    }
    struct gov_run_start start = { GOV_RUN_TEMPLATE, seen.department, q->template_name->str, 0,
                                   seen.revoked ? GOV_VERSION_REVOKED : GOV_VERSION_DRAFT };
    gov_run_may_start(&ctx->who->gov, &start, &d);
    if (d.reason != GOV_REVOKED && d.reason != GOV_NOT_APPROVED) {
        return api_decision(ctx, &d) != 0 ? -1 : 0;
    }
    if (seen.revoked) {
        api_error(ctx, 409, "TEMPLATE_REVOKED", "template %s: its approved versions are revoked",
                  q->template_name->str);
    } else {
        api_error(ctx, 409, "VERSION_NOT_APPROVED", "template %s has no approved version",
                  q->template_name->str);
    }
    return -1;
}

/* Reads the version a template run asks for: 0, or -1 after answering. */
static int api_run_version(struct api_ctx *ctx, const struct api_run_request *q,
                           struct api_version_copy *ret)
{
    enum store_rc rc = api_version_read(ctx->store, q->template_name->str, q->asked, ret);
    if (rc == STORE_NOT_FOUND && !q->version && api_run_none_approved(ctx, q) != 0) {
        return -1;
    }
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no template %s%s", q->template_name->str,
                  q->version ? " with that version" : "");
        return -1;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    return 0;
}

/* May the caller start the run (gov_run_may_start)? 0, or -1 after answering. */
static int api_run_decide(struct api_ctx *ctx, const struct api_run_request *q,
                          const struct api_version_copy *v, const char *department)
{
    struct gov_run_start start = { GOV_RUN_ADHOC, department, NULL, 0, GOV_VERSION_APPROVED };
    struct gov_decision d;
    if (!q->adhoc) {
        start.kind = GOV_RUN_TEMPLATE;
        start.template_name = q->template_name->str;
        start.version = q->asked;
        start.state = api_version_state(v->state);
    }
    gov_run_may_start(&ctx->who->gov, &start, &d);
    return api_decision(ctx, &d);
}

/* A template run's input fits its version's schema; an ad-hoc run's source fits its run.start
 * record, which holds it whole. 0, or -1 after answering. */
static int api_run_check(struct api_ctx *ctx, const struct api_run_request *q,
                         const struct api_version_copy *v)
{
    if (!q->adhoc) {
        return api_run_check_input(ctx, v->input_schema, q->input_text);
    }
    struct buf escaped;
    buf_init(&escaped, API_ADHOC_AUDIT_MAX);
    int fits = json_write_string(&escaped, q->source->str, q->source->str_len) == BUF_OK;
    buf_done(&escaped);
    if (!fits) {
        api_error(ctx, 413, "PAYLOAD_TOO_LARGE",
                  "an ad-hoc source is audited whole: at most %zu bytes once escaped as JSON",
                  API_ADHOC_AUDIT_MAX);
        return -1;
    }
    return 0;
}

/* The department's policy for the run: ad-hoc code allowed, and the effective autonomy (the
 * stricter of the version's and the department's). 0, or -1 after answering. */
static int api_run_mode(struct api_ctx *ctx, const struct api_run_request *q,
                        const struct api_version_copy *v, const char *department,
                        struct api_run_mode *ret)
{
    struct api_dept_policy policy;
    enum gov_autonomy version = GOV_AUTONOMOUS;
    enum gov_autonomy dept = GOV_AUTONOMOUS;
    enum store_rc rc =
            ctx->store->ops->department_get(ctx->store, department, api_dept_policy_fn, &policy);
    if (rc != STORE_OK) {
        if (rc == STORE_NOT_FOUND) {
            api_error(ctx, 404, "NOT_FOUND", "no department %s", department);
        } else {
            api_store_failed(ctx);
        }
        return -1;
    }
    if (q->adhoc && !policy.allow_adhoc) {
        api_error(ctx, 403, "ADHOC_DISABLED", "department %s does not allow ad-hoc runs",
                  department);
        return -1;
    }
    /* an autonomy the store holds that gov does not know is supervised: a person decides */
    if (gov_autonomy_parse(policy.autonomy, &dept) != 0) {
        dept = GOV_SUPERVISED;
    }
    if (!q->adhoc && gov_autonomy_parse(v->autonomy, &version) != 0) {
        version = GOV_SUPERVISED;
    }
    ret->autonomy =
            gov_autonomy_effective(q->adhoc ? GOV_RUN_ADHOC : GOV_RUN_TEMPLATE, version, dept);
    ret->supervised = ret->autonomy == GOV_SUPERVISED;
    int wait = !q->wait || q->wait->type == JSON_TRUE;
    /* with several nodes, a run nobody waits for goes to the queue: the first node with room
     * to claim it executes it (this one is kicked, every one notified) */
    int queue =
            !ret->supervised && !wait && ctx->svc && ctx->svc->runs && runs_node(ctx->svc->runs);
    ret->state = ret->supervised ? GOV_RUN_AWAITING_APPROVAL
                 : queue         ? GOV_RUN_QUEUED
                                 : GOV_RUN_RUNNING;
    ret->start = ret->supervised ? RUNS_START_HELD
                 : queue         ? RUNS_START_QUEUED
                 : wait          ? RUNS_START_WAIT
                                 : RUNS_START_NOWAIT;
    return 0;
}

/* Hands the checked run to the run writer (runs_submit), which records it with others in one
 * commit, then answers and starts it; answers now on a failure. */
struct api_fork;
static int api_fork_plan(struct api_ctx *ctx, struct api_fork *f, struct runs_plan *plan);
static void api_fork_start(const struct api_fork *f, struct api_run_start *st);

static void api_run_submit(struct api_ctx *ctx, struct api_run_request *q,
                           const struct api_version_copy *v, const char *department,
                           const struct api_run_mode *m, struct api_fork *fork)
{
    struct runs_plan *plan = NULL;
    char id[RUNS_ID_LEN + 1];
    char approval[RUNS_ID_LEN + 1] = ""; /* only a supervised run opens an approval at its start */
    struct al_error err;
    char created[RUNS_TIME_LEN];
    if (runs_new_id("run_", id) != 0 || (m->supervised && runs_new_id("apr_", approval) != 0)) {
        api_error(ctx, 500, "INTERNAL", "the random generator failed");
        return;
    }
    /* a run executing at once starts its guest clock at its creation: an execution taken over
     * from a dead node starts at the same point (a held or queued run's starts when claimed) */
    int64_t created_ms = runs_now_ms();
    runs_time_text(created_ms, created);
    struct store_run row = {
        .id = id,
        .template_name = q->adhoc ? "" : q->template_name->str,
        .version = q->adhoc ? 0 : v->version,
        .department = department,
        .principal = ctx->who->name,
        .status = gov_run_state_name(m->state),
        .input = q->input_text,
        .source = q->adhoc ? q->source->str : NULL,
        .language = q->adhoc ? (q->language ? q->language->str : "js") : NULL,
        .functions = q->functions_text,
        .created = created,
    };
    /* bind the functions before anything is recorded: a missing connector starts nothing */
    memset(&err, 0, sizeof err);
    const struct mounts_roots *roots = ctx->svc ? ctx->svc->mount_roots : NULL;
    enum store_rc rc = api_run_plan(ctx->store, ctx->secret_keys, roots, &row, &plan, &err);
    if (rc != STORE_OK) {
        if (rc == STORE_CONFLICT) {
            api_error(ctx, 409, "CONFLICT", "%s", err.message);
        } else {
            api_store_failed(ctx);
        }
        return;
    }
    if (m->state == GOV_RUN_RUNNING) {
        plan->clock_ms = created_ms;
    }
    /* every execution builds its workspace from these (the record keeps them for the next) */
    plan->workspace_manifest = q->ws.manifest ? strdup(q->ws.manifest) : NULL;
    plan->workspace_tar = q->ws.tar;
    plan->workspace_tar_len = q->ws.tar_len;
    q->ws.tar = NULL;
    q->ws.tar_len = 0;
    if (q->ws.manifest && !plan->workspace_manifest) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        runs_plan_free(plan);
        return;
    }
    rc = plan->workspace_manifest
                 ? api_run_workspace_mounts(ctx->store, ctx->secret_keys, roots, plan, &err)
                 : STORE_OK;
    if (rc != STORE_OK) {
        if (rc == STORE_CONFLICT) {
            api_error(ctx, 409, "CONFLICT", "%s", err.message);
        } else {
            api_store_failed(ctx);
        }
        runs_plan_free(plan);
        return;
    }
    if (fork && api_fork_plan(ctx, fork, plan) != 0) {
        runs_plan_free(plan);
        return;
    }
    if (!ctx->svc || !ctx->svc->runs) {
        api_error(ctx, 500, "INTERNAL", API_NO_RUNS_MESSAGE);
        runs_plan_free(plan);
        return;
    }
    struct api_run_start *start = api_run_start_new(ctx, &row, q->adhoc ? NULL : v, m, approval);
    if (start && fork) {
        api_fork_start(fork, start);
    }
    if (start) {
        start->ws = q->ws; /* taken: its tar went to the plan */
        memset(&q->ws, 0, sizeof q->ws);
    }
    struct http_deferred *deferred = start ? http_defer(ctx->req, ctx->resp) : NULL;
    if (!deferred) {
        api_run_start_free(start);
        runs_plan_free(plan);
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return;
    }
    struct runs_start job = {
        .plan = plan,
        .mode = m->start,
        .deferred = deferred,
        .record = api_run_start_record,
        .record_userdata = start,
        .record_free = api_run_start_free,
    };
    snprintf(job.key_prefix, sizeof job.key_prefix, "%s", ctx->who->key_prefix);
    snprintf(job.route, sizeof job.route, "%s", ctx->route ? ctx->route : "");
    runs_submit(ctx->svc->runs, &job);
}

void api_runs_create(struct api_ctx *ctx)
{
    struct api_run_request q;
    struct api_version_copy v;
    struct api_run_mode m;
    memset(&q, 0, sizeof q);
    memset(&v, 0, sizeof v);
    if (api_run_parse(ctx, &q) != 0 || (!q.adhoc && api_run_version(ctx, &q, &v) != 0)) {
        goto out;
    }
    const char *department = q.adhoc ? q.department->str : v.department;
    /* a template run's workspace is its version's manifest */
    if (api_run_decide(ctx, &q, &v, department) != 0 || api_run_check(ctx, &q, &v) != 0 ||
        api_run_mode(ctx, &q, &v, department, &m) != 0 ||
        api_run_workspace_resolve(ctx, q.workspace, q.adhoc ? NULL : q.template_name->str,
                                  q.adhoc ? NULL : v.workspace, department, &q.ws) != 0) {
        goto out;
    }
    api_run_submit(ctx, &q, &v, department, &m, NULL);
out:
    api_run_request_done(&q);
    api_version_copy_done(&v);
}

/* ---------------------------------------------------------------- POST /v1/runs/{id}/fork */

/* A fork of run `original` from call at_call: a new run of the same version whose journal is
 * the original's longest prefix of delivery positions whose calls all come before at_call
 * (docs/server.md "Durable runs"), with the original's seed and clock. */
struct api_fork {
    struct api_run_copy original;
    int found;
    int64_t at_call;
    int64_t upto;      /* the last position replayed; 0: none */
    int64_t last_call; /* the highest call id in the original's journal */
    int live;          /* a position with a call >= at_call was met: the rest runs live */
    struct runs_plan *plan;
    struct store *store; /* the journal's */
    int failed;
};

static int api_fork_row_fn(void *userdata, const struct store_run *row)
{
    struct api_fork *f = userdata;
    f->found = api_run_copy_set(&f->original, row) == 0;
    f->failed = !f->found;
    return 0;
}

static int api_fork_entry_fn(void *userdata, const struct store_journal_entry *e)
{
    struct api_fork *f = userdata;
    char *end = NULL;
    long long call = strtoll(e->call_id, &end, 10);
    if (!end || *end || call < 1) {
        f->failed = 1;
        return 1;
    }
    f->last_call = call > f->last_call ? call : f->last_call;
    if (!f->live && call < f->at_call) {
        if (runs_plan_add_journal(f->plan, f->store, e) != 0) {
            f->failed = 1;
            return 1;
        }
        f->upto = e->position;
    } else {
        /* a journal replays a prefix of positions: a call before at_call answered after one
         * from at_call on is made live too */
        f->live = 1;
    }
    return 0;
}

/* The fork's plan gets the original's journal prefix, seed and clock: 0, or -1 after answering
 * (400 for an at_call outside 1..the journal's last call + 1). */
static int api_fork_plan(struct api_ctx *ctx, struct api_fork *f, struct runs_plan *plan)
{
    const struct store_run *o = &f->original.row;
    char *end = NULL;
    uint64_t seed = strtoull(o->seed, &end, 16);
    f->plan = plan;
    f->store = ctx->store;
    enum store_rc rc = ctx->store->ops->journal_read(ctx->store, o->id, 0, api_fork_entry_fn, f);
    f->plan = NULL;
    if (rc != STORE_OK || f->failed || !end || *end) {
        api_store_failed(ctx);
        return -1;
    }
    if (f->at_call > f->last_call + 1) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"at_call\" must be from 1 to %" PRId64 " (run %s has answers of calls "
                  "up to %" PRId64 ")",
                  f->last_call + 1, o->id, f->last_call);
        return -1;
    }
    plan->has_seed = 1;
    plan->seed = seed;
    plan->clock_ms = o->clock_ms;
    plan->fork_at_call = f->at_call;
    return 0;
}

static void api_fork_start(const struct api_fork *f, struct api_run_start *st)
{
    snprintf(st->forked_from, sizeof st->forked_from, "%s", f->original.row.id);
    st->at_call = f->at_call;
    st->fork_upto = f->upto;
}

void api_runs_fork(struct api_ctx *ctx)
{
    const char *id = api_param(ctx, "id");
    const struct json_node *at_call = NULL;
    struct api_run_request q;
    struct api_version_copy v;
    struct api_run_mode m;
    struct api_fork f;
    struct gov_decision d;
    struct json_node template_name;
    memset(&q, 0, sizeof q);
    memset(&v, 0, sizeof v);
    memset(&f, 0, sizeof f);
    memset(&template_name, 0, sizeof template_name);
    const struct api_field fields[] = {
        { "at_call", JSON_NUMBER, 1, &at_call },
        { "input", JSON_OBJECT, 0, &q.input },
        { "wait", JSON_TRUE, 0, &q.wait },
    };
    if (api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        return;
    }
    if (at_call->num < 1 || at_call->num > 1e15 || at_call->num != (double)(int64_t)at_call->num) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"at_call\" must be a positive integer");
        return;
    }
    f.at_call = (int64_t)at_call->num;
    enum store_rc rc = ctx->store->ops->run_get(ctx->store, id, api_fork_row_fn, &f);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !f.found && !f.failed)) {
        api_error(ctx, 404, "NOT_FOUND", "no run %s", id);
        goto out;
    }
    if (rc != STORE_OK || f.failed) {
        api_store_failed(ctx);
        goto out;
    }
    const struct store_run *o = &f.original.row;
    struct gov_run r = { o->id, o->department, o->principal, api_run_state(o->status) };
    if (!o->template_name[0]) {
        /* an ad-hoc run has no approved version to run again: only who sees it is told why */
        if (gov_run_may_see(&ctx->who->gov, &r, &d)) {
            api_error(ctx, 409, "CONFLICT", "run %s is ad-hoc: only a template run forks", id);
        } else {
            api_error(ctx, 404, "NOT_FOUND", "no run %s", id);
        }
        goto out;
    }
    rc = api_version_read(ctx->store, o->template_name, o->version, &v);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(ctx);
        goto out;
    }
    struct gov_run_start start = { GOV_RUN_TEMPLATE, v.department[0] ? v.department : o->department,
                                   o->template_name, o->version, api_version_state(v.state) };
    gov_run_may_fork(&ctx->who->gov, &r, &start, &d);
    if (api_decision(ctx, &d) != 0) {
        goto out;
    }
    if (!o->seed || strlen(o->seed) != 16 || o->clock_ms <= 0) {
        api_error(ctx, 409, "CONFLICT", "run %s never started from its input: no journal to fork",
                  id);
        goto out;
    }
    template_name.type = JSON_STRING;
    template_name.str = o->template_name;
    template_name.str_len = strlen(o->template_name);
    q.template_name = &template_name;
    q.asked = o->version;
    q.input_text = q.input ? strndup(q.input->raw, q.input->raw_len) : strdup(o->input);
    if (!q.input_text) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        goto out;
    }
    if (api_run_check(ctx, &q, &v) != 0 || api_run_mode(ctx, &q, &v, v.department, &m) != 0) {
        goto out;
    }
    /* a fork's workspace starts as the original's did: its journal's reads answer the same */
    rc = api_run_workspace_of(ctx->store, o->id, &q.ws);
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    if (m.start == RUNS_START_QUEUED) {
        /* a fork executes here, with its plan: a claim from the queue would start it afresh */
        m.state = GOV_RUN_RUNNING;
        m.start = RUNS_START_NOWAIT;
    }
    api_run_submit(ctx, &q, &v, v.department, &m, &f);
out:
    api_run_request_done(&q);
    api_version_copy_done(&v);
    api_run_copy_done(&f.original);
}

/* ---------------------------------------------------------------- reading and cancelling */

struct api_run_head {
    int found;
    enum gov_run_state state;
    char department[STORE_NAME_MAX + 1];
    char principal[STORE_NAME_MAX + 1];
};

static int api_run_head_fn(void *userdata, const struct store_run *row)
{
    struct api_run_head *h = userdata;
    h->found = 1;
    h->state = api_run_state(row->status);
    snprintf(h->department, sizeof h->department, "%s", row->department);
    snprintf(h->principal, sizeof h->principal, "%s", row->principal);
    return 0;
}

/* Reads the head of run {id} (a request without a body) into *h and asks src/gov whether the
 * caller may (see, cancel) it: 0, or -1 after answering. */
static int api_run_find(struct api_ctx *ctx, struct api_run_head *h,
                        int (*may)(const struct gov_principal *p, const struct gov_run *r,
                                   struct gov_decision *ret))
{
    const char *id = api_param(ctx, "id");
    struct gov_decision d;
    memset(h, 0, sizeof *h);
    if (api_body(ctx, NULL, 0) != 0) {
        return -1;
    }
    enum store_rc rc = ctx->store->ops->run_get(ctx->store, id, api_run_head_fn, h);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !h->found)) {
        api_error(ctx, 404, "NOT_FOUND", "no run %s", id);
        return -1;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    struct gov_run r = { id, h->department, h->principal, h->state };
    may(&ctx->who->gov, &r, &d);
    return api_decision(ctx, &d);
}

int api_run_visible(struct api_ctx *ctx)
{
    struct api_run_head h;
    return api_run_find(ctx, &h, gov_run_may_see);
}

void api_runs_get(struct api_ctx *ctx)
{
    struct api_run_head h;
    const char *id = api_param(ctx, "id");
    /* its starter, and a holder of a role other than agent in its department; another agent
     * of the department is answered 404, as if the run did not exist */
    if (api_run_find(ctx, &h, gov_run_may_see) != 0) {
        return;
    }
    api_run_reply(ctx, id);
}

struct api_run_list {
    struct api_ctx *ctx;
    const struct gov_principal *who;
    struct buf *b;
    int n;
    int limit;
    const char *after_time;
    enum store_rc rc;
};

static int api_run_list_fn(void *userdata, const struct store_run *row)
{
    struct api_run_list *l = userdata;
    struct gov_run r = { row->id, row->department, row->principal, api_run_state(row->status) };
    struct gov_decision d;
    if (!gov_run_may_see(l->who, &r, &d)) {
        return 0;
    }
    if (l->after_time && strcmp(row->created, l->after_time) <= 0) {
        return 0;
    }
    if (l->n == l->limit) {
        return 1;
    }
    /* a page ends before the answer would pass its cap: `after` the last id gets the rest */
    struct buf item;
    buf_init(&item, API_RUNS_PAGE_BYTES);
    l->rc = runs_json(l->ctx->store, row, &item);
    int fits = item.data && l->b->len + item.len + 4 <= API_RUNS_PAGE_BYTES;
    if (l->rc == STORE_OK && !fits && l->n == 0) {
        /* one run too large for a page on its own: listed by name, so paging goes on past it */
        buf_reset(&item);
        api_member(&item, "{\"id\":", row->id);
        api_member(&item, ",\"status\":", row->status);
        buf_append_str(&item, ",\"truncated\":true}");
        fits = 1;
    }
    if (l->rc == STORE_OK && fits) {
        buf_append_str(l->b, l->n++ ? "," : "");
        buf_append(l->b, item.data, item.len);
    }
    buf_done(&item);
    return l->rc != STORE_OK || !fits;
}

static int api_run_seq_fn(void *userdata, const struct store_run *row)
{
    *(int64_t *)userdata = row->seq;
    return 0;
}

/* The list's query: template, status, principal, after (a run id or a time) and limit. 0, or
 * -1 after answering 400. */
static int api_runs_list_query(struct api_ctx *ctx, struct store_run_filter *f,
                               struct api_run_list *l)
{
    f->template_name = http_query(ctx->req, "template");
    f->status = http_query(ctx->req, "status");
    f->principal = http_query(ctx->req, "principal");
    const char *after = http_query(ctx->req, "after");
    const char *limit = http_query(ctx->req, "limit");
    l->limit = 100;
    if (limit) {
        char *end = NULL;
        long n = strtol(limit, &end, 10);
        if (*limit == '\0' || *end != '\0' || n < 1 || n > API_RUNS_LIST_MAX) {
            api_error(ctx, 400, "INVALID_REQUEST", "limit must be 1..%d", API_RUNS_LIST_MAX);
            return -1;
        }
        l->limit = (int)n;
    }
    if (after && strncmp(after, "run_", 4) == 0) {
        /* a run id: the runs after it */
        f->after_seq = -1;
        if (ctx->store->ops->run_get(ctx->store, after, api_run_seq_fn, &f->after_seq) !=
                    STORE_OK ||
            f->after_seq < 0) {
            api_error(ctx, 400, "INVALID_REQUEST", "after: no run %.64s", after);
            return -1;
        }
    } else if (after) {
        /* a time: RFC 3339 UTC, compared as text like the stored times */
        if (strlen(after) < 10 || strlen(after) > 30 || after[4] != '-') {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "after must be a run id or a time like 2026-01-02T03:04:05Z");
            return -1;
        }
        l->after_time = after;
    }
    return 0;
}

void api_runs_list(struct api_ctx *ctx)
{
    struct store_run_filter f;
    struct api_run_list l;
    memset(&f, 0, sizeof f);
    memset(&l, 0, sizeof l);
    if (api_body(ctx, NULL, 0) != 0 || api_runs_list_query(ctx, &f, &l) != 0) {
        return;
    }
    /* the runs gov_run_may_see shows the caller, decided run by run */
    l.ctx = ctx;
    l.who = &ctx->who->gov;
    l.b = &ctx->resp->body;
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    enum store_rc rc = ctx->store->ops->run_list(ctx->store, &f, api_run_list_fn, &l);
    if (rc != STORE_OK || l.rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

/* Runs (or approvals: id alone) to change once the store's walk over them has ended. */
struct api_run_ids {
    size_t n;
    size_t cap;
    struct api_run_id {
        char id[RUNS_ID_LEN + 1];
        char department[STORE_NAME_MAX + 1];
        enum gov_run_state state;
    } * rows;
    int64_t version; /* of the runs a revocation cancels */
    int any_version; /* ... or of every version, and ad-hoc runs */
};

/* A new row at the end of l; NULL when out of memory. */
static struct api_run_id *api_run_ids_add(struct api_run_ids *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        struct api_run_id *rows = realloc(l->rows, cap * sizeof *rows);
        if (!rows) {
            return NULL;
        }
        l->rows = rows;
        l->cap = cap;
    }
    return &l->rows[l->n++];
}

static int api_ids_fn(void *userdata, const struct store_approval *a)
{
    struct api_run_id *r = api_run_ids_add(userdata);
    if (r) {
        snprintf(r->id, sizeof r->id, "%s", a->id);
    }
    return r == NULL;
}

/* Closes the pending approvals of a run (status cancelled), one approval.cancel record each. */
static enum store_rc api_run_close_approvals(struct api_ctx *ctx, const char *run,
                                             const char *department, const char *why)
{
    struct store *s = ctx->store;
    struct api_run_ids l = { 0, 0, NULL, 0, 0 };
    enum store_rc rc = s->ops->approval_list(s, run, "pending", api_ids_fn, &l);
    for (size_t i = 0; i < l.n && rc == STORE_OK; i++) {
        const char *id = l.rows[i].id;
        struct buf d;
        buf_init(&d, 4096);
        rc = s->ops->approval_decide(s, id, "cancelled", "airlockd", why);
        api_member(&d, "{\"approval\":", id);
        api_member(&d, ",\"run\":", run);
        api_member(&d, ",\"reason\":", why);
        buf_append_str(&d, "}");
        if (rc == STORE_OK) {
            rc = d.data ? s->ops->audit_append(s, "airlockd", "approval.cancel", id, department,
                                               d.data, NULL)
                        : STORE_ERROR;
        }
        buf_done(&d);
    }
    free(l.rows);
    return rc;
}

static int api_outcome_fn(void *userdata, const struct store_run *row)
{
    *(char **)userdata = row->outcome ? strdup(row->outcome) : NULL;
    return 0;
}

/* Gives cancelled run `id` the outcome of error ABORTED with message `why`, keeping the console,
 * stats and host calls of the outcome it had (every outcome has both or neither of the first
 * two). */
enum store_rc api_run_set_aborted(struct store *s, const char *id, const char *why)
{
    static const char *const kept[][2] = { { "console", "[]" },
                                           { "stats", "{}" },
                                           { "host_calls", "[]" } };
    char *outcome = NULL;
    struct json_doc *doc = NULL;
    struct al_error err;
    struct buf b;
    buf_init(&b, (size_t)96 << 20);
    enum store_rc rc = s->ops->run_get(s, id, api_outcome_fn, &outcome);
    if (rc == STORE_OK && outcome &&
        json_parse(outcome, strlen(outcome), API_DEPTH_MAX + 8, &doc, &err) != AL_OK) {
        doc = NULL; /* an outcome that is not JSON keeps nothing */
    }
    api_member(&b, "{\"error\":{\"code\":\"ABORTED\",\"name\":\"\",\"message\":", why);
    buf_append_str(&b, ",\"stack\":\"\"}");
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        const struct json_node *n = doc ? json_get(json_root(doc), kept[i][0]) : NULL;
        buf_printf(&b, ",\"%s\":", kept[i][0]);
        buf_append(&b, n ? n->raw : kept[i][1], n ? n->raw_len : strlen(kept[i][1]));
    }
    buf_append_str(&b, "}");
    if (rc == STORE_OK) {
        rc = b.data ? s->ops->run_set_status(s, id, "cancelled", "cancelled", b.data) : STORE_ERROR;
    }
    json_doc_free(doc);
    free(outcome);
    buf_done(&b);
    return rc;
}

static int api_execution_seen(void *userdata, const struct store_execution *e)
{
    (void)userdata;
    (void)e;
    return 0;
}

/* With several nodes, a cancelled run that executes keeps an execution row until its node's
 * writer records its end (and forgets the row): should that node be dead, the row tells the
 * node that takes its runs over that the end is still to record (nodes.c). */
static enum store_rc api_run_keep_execution(struct store *s, const char *id)
{
    enum store_rc rc = s->ops->execution_get(s, id, api_execution_seen, NULL);
    if (rc == STORE_NOT_FOUND) {
        struct store_execution e = { id, NULL, NULL, 0, 0 };
        rc = s->ops->execution_put(s, &e);
    }
    return rc;
}

/* Ends a run that waits for a person, waits in the queue or is still running (found in `state`)
 * as cancelled, with error ABORTED and `why`: its pending approvals close and its continuation
 * is dropped. Inside a transaction. One executing has its end recorded by its node's writer; one
 * not executing ends here. A queued run a node claims meanwhile is cancelled as an executing
 * one (that node records its end), so its end is recorded once. */
static enum store_rc api_run_cancel_stored(struct api_ctx *ctx, const char *id,
                                           const char *department, const char *why,
                                           enum gov_run_state state)
{
    int queued = state == GOV_RUN_QUEUED;
    int waiting = queued || state == GOV_RUN_AWAITING_APPROVAL;
    struct store *s = ctx->store;
    struct buf d;
    buf_init(&d, 64 * 1024);
    enum store_rc rc = s->ops->run_set_status(
            s, id, queued ? "queued" : "running|queued|awaiting_approval", "cancelled", NULL);
    if (rc == STORE_CONFLICT && queued) {
        waiting = 0; /* claimed meanwhile: it executes now */
        rc = s->ops->run_set_status(s, id, "running", "cancelled", NULL);
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_set_continuation(s, id, NULL);
    }
    if (rc == STORE_OK && waiting) {
        rc = s->ops->call_clear(s, id); /* a run queued again after its node died */
    } else if (rc == STORE_OK && ctx->svc && ctx->svc->runs && runs_node(ctx->svc->runs)) {
        rc = api_run_keep_execution(s, id);
    }
    if (rc == STORE_OK) {
        rc = api_run_close_approvals(ctx, id, department, why);
    }
    if (rc == STORE_OK) {
        rc = api_run_set_aborted(s, id, why);
    }
    /* the node executing it (maybe another) hears of it once this commits */
    if (rc == STORE_OK && s->ops->notify) {
        rc = s->ops->notify(s, STORE_CHANNEL_CANCEL, id);
    }
    if (rc == STORE_OK) {
        api_member(&d, "{\"run\":", id);
        api_member(&d, ",\"reason\":", why);
        buf_append_str(&d, "}");
        rc = d.data ? api_audit(ctx, "run.cancel", id, department, d.data) : STORE_ERROR;
    }
    if (rc == STORE_OK && waiting) {
        /* a run that executes gets its run.end from the writer; one that waited ends here */
        buf_reset(&d);
        api_member(&d, "{\"run\":", id);
        buf_append_str(&d,
                       ",\"status\":\"cancelled\",\"error\":{\"code\":\"ABORTED\",\"message\":");
        api_str(&d, why);
        buf_append_str(&d, "}}");
        rc = d.data ? s->ops->audit_append(s, "airlockd", "run.end", id, department, d.data, NULL)
                    : STORE_ERROR;
    }
    buf_done(&d);
    return rc;
}

/* A cancel (or a revocation) of runs executing here, once its record is durable. */
struct api_cancel {
    struct runs *runs;
    char id[RUNS_ID_LEN + 1]; /* "": every run of template_name's version */
    char template_name[STORE_NAME_MAX + 1];
    int64_t version;
    char why[GOV_WHY_MAX + 16];
};

static void api_cancel_fire(void *arg, int committed)
{
    struct api_cancel *c = arg;
    if (committed && c->id[0]) {
        runs_cancel(c->runs, c->id, c->why);
    } else if (committed) {
        runs_cancel_version(c->runs, c->template_name, c->version, c->why);
    }
    free(c);
}

/* Once the writer's batch is durable, run `id` executing here ends ABORTED with `why`. */
static void api_cancel_after(struct api_ctx *ctx, const char *id, const char *why)
{
    struct api_cancel *c = ctx->svc && ctx->svc->runs ? calloc(1, sizeof *c) : NULL;
    if (c) {
        c->runs = ctx->svc->runs;
        snprintf(c->id, sizeof c->id, "%s", id);
        snprintf(c->why, sizeof c->why, "%s", why);
        api_after_commit(ctx->tx, api_cancel_fire, c);
    }
}

/* Ends run `id` (found as its head says) cancelled, in one transaction; once that is durable,
 * an execution here ends ABORTED (its end adds its console and stats). 0, or -1 after
 * answering. */
static int api_run_cancel(struct api_ctx *ctx, const char *id, const struct api_run_head *h,
                          const char *why)
{
    struct store *s = ctx->store;
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    enum store_rc rc = api_run_cancel_stored(ctx, id, h->department, why, h->state);
    rc = api_tx_end(s, rc);
    if (rc != STORE_OK) {
        if (rc == STORE_CONFLICT) {
            api_error(ctx, 409, "CONFLICT", "run %s has ended", id);
        } else {
            api_store_failed(ctx);
        }
        return -1;
    }
    api_cancel_after(ctx, id, why);
    return 0;
}

void api_runs_cancel(struct api_ctx *ctx)
{
    struct api_run_head h;
    char why[STORE_NAME_MAX + 32];
    const char *id = api_param(ctx, "id");
    /* its starter, an approver of its department or an admin; a run the caller may not see is
     * not there (404), one it sees but may not cancel is refused (403) */
    if (api_run_find(ctx, &h, gov_run_may_cancel) != 0) {
        return;
    }
    snprintf(why, sizeof why, "cancelled by %s", ctx->who->name);
    if (api_run_cancel(ctx, id, &h, why) != 0) {
        return;
    }
    api_run_reply(ctx, id);
}

static int api_run_ids_fn(void *userdata, const struct store_run *row)
{
    struct api_run_ids *l = userdata;
    enum gov_run_state state = api_run_state(row->status);
    if ((!l->any_version && row->version != l->version) || gov_run_state_ended(state)) {
        return 0;
    }
    struct api_run_id *r = api_run_ids_add(l);
    if (!r) {
        return 1;
    }
    snprintf(r->id, sizeof r->id, "%s", row->id);
    snprintf(r->department, sizeof r->department, "%s", row->department);
    r->state = state;
    return 0;
}

static void api_revoke_why(char *why, size_t cap, const char *template_name, int64_t version)
{
    snprintf(why, cap, "cancelled: %s version %" PRId64 " was revoked", template_name, version);
}

enum store_rc api_version_revoking(struct api_ctx *ctx, const char *template_name, int64_t version)
{
    struct store *s = ctx->store;
    struct store_run_filter f = { .template_name = template_name };
    struct api_run_ids l = { .version = version };
    char why[STORE_NAME_MAX * 2 + 64];
    api_revoke_why(why, sizeof why, template_name, version);
    enum store_rc rc = s->ops->run_list(s, &f, api_run_ids_fn, &l);
    for (size_t i = 0; i < l.n && rc == STORE_OK; i++) {
        rc = api_run_cancel_stored(ctx, l.rows[i].id, l.rows[i].department, why, l.rows[i].state);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK; /* it ended meanwhile (on another node): nothing was written */
        }
    }
    free(l.rows);
    return rc;
}

void api_version_revoked(struct api_ctx *ctx, const char *template_name, int64_t version)
{
    struct api_cancel *c = ctx->svc && ctx->svc->runs ? calloc(1, sizeof *c) : NULL;
    if (c) {
        c->runs = ctx->svc->runs;
        snprintf(c->template_name, sizeof c->template_name, "%s", template_name);
        c->version = version;
        api_revoke_why(c->why, sizeof c->why, template_name, version);
        api_after_commit(ctx->tx, api_cancel_fire, c);
    }
}

/* ---------------------------------------------------------------- a principal's revocation */

static int api_key_active_fn(void *userdata, const struct store_key *k)
{
    *(size_t *)userdata += k->revoked == NULL;
    return 0;
}

/* A run's starter as the store `s` says now: its grants and how many keys it has left, for
 * gov_run_may_go_on. */
static enum store_rc api_starter_read(struct store *s, const char *principal,
                                      struct gov_principal *starter, size_t *keys)
{
    struct auth_principal who;
    char why[AUTH_WHY_MAX];
    *keys = 0;
    /* a principal disabled or deleted has no key that counts (auth_principal_load) */
    enum auth_result ar = auth_principal_load(s, principal, &who, why);
    if (ar == AUTH_STORE_FAILED) {
        return STORE_ERROR;
    }
    if (ar != AUTH_OK) {
        (void)gov_principal_init(starter, principal);
        return STORE_OK;
    }
    *starter = who.gov;
    return s->ops->key_list(s, principal, api_key_active_fn, keys);
}

/* The runs a principal's revocation cancelled, to stop here once it has committed. */
struct api_cancels {
    size_t n;
    struct api_cancel *c[];
};

enum store_rc api_principal_revoking(struct api_ctx *ctx, const char *principal,
                                     struct api_cancels **ret)
{
    static const char *const in_progress[] = { "queued", "running", "awaiting_approval" };
    struct store *s = ctx->store;
    struct api_run_ids l = { .any_version = 1 };
    struct api_cancels *c = NULL;
    enum store_rc rc = STORE_OK;
    *ret = NULL;
    for (size_t i = 0; i < sizeof in_progress / sizeof in_progress[0] && rc == STORE_OK; i++) {
        struct store_run_filter f = { .principal = principal, .status = in_progress[i] };
        rc = s->ops->run_list(s, &f, api_run_ids_fn, &l);
    }
    struct gov_principal starter; /* one principal's runs: read once */
    size_t keys = 0;
    if (rc == STORE_OK && l.n) {
        c = calloc(1, sizeof *c + l.n * sizeof c->c[0]);
        rc = c ? api_starter_read(s, principal, &starter, &keys) : STORE_ERROR;
    }
    for (size_t i = 0; i < l.n && rc == STORE_OK; i++) {
        struct gov_run r = { l.rows[i].id, l.rows[i].department, principal, l.rows[i].state };
        struct gov_decision d;
        if (gov_run_may_go_on(&starter, keys, &r, &d)) {
            continue;
        }
        struct api_cancel *one = calloc(1, sizeof *one);
        if (!one) {
            rc = STORE_ERROR;
            break;
        }
        snprintf(one->id, sizeof one->id, "%s", r.id);
        snprintf(one->why, sizeof one->why, "cancelled: %s", d.why);
        rc = api_run_cancel_stored(ctx, r.id, r.department, one->why, r.state);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK; /* it ended meanwhile (on another node): nothing was written */
            free(one);
        } else {
            c->c[c->n++] = one;
        }
    }
    free(l.rows);
    if (rc != STORE_OK) {
        api_principal_revoked(ctx, c, 0);
        return rc;
    }
    *ret = c;
    return STORE_OK;
}

void api_principal_revoked(struct api_ctx *ctx, struct api_cancels *c, int committed)
{
    for (size_t i = 0; c && i < c->n; i++) {
        if (committed) {
            api_cancel_after(ctx, c->c[i]->id, c->c[i]->why);
        }
        free(c->c[i]);
    }
    free(c);
}

int api_run_may_resume(struct api_ctx *ctx, const char *id)
{
    struct store *s = ctx->store;
    struct api_run_head h;
    struct gov_decision d;
    char why[GOV_WHY_MAX + 16] = "";
    memset(&h, 0, sizeof h);
    memset(&d, 0, sizeof d);
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    enum store_rc rc = s->ops->run_get(s, id, api_run_head_fn, &h);
    struct gov_run r = { id, h.department, h.principal, h.state };
    struct gov_principal starter;
    size_t keys = 0;
    int go_on = 1; /* nothing to resume (not found, or ended) */
    if (rc == STORE_OK && h.found && !gov_run_state_ended(h.state)) {
        rc = api_starter_read(s, h.principal, &starter, &keys);
        go_on = rc == STORE_OK ? gov_run_may_go_on(&starter, keys, &r, &d) : -1;
    }
    if (go_on == 0) {
        snprintf(why, sizeof why, "cancelled: %s", d.why);
        rc = api_run_cancel_stored(ctx, id, h.department, why, h.state);
    }
    if ((go_on > 0 && rc != STORE_ERROR) || rc == STORE_NOT_FOUND || rc == STORE_CONFLICT) {
        s->ops->tx_rollback(s);
        return 0; /* it may go on, or it is gone or ended meanwhile: the decision is taken */
    }
    rc = api_tx_end(s, go_on < 0 ? STORE_ERROR : rc);
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    api_cancel_after(ctx, id, why);
    api_error(ctx, d.status, d.code, "run %s cannot go on: %s; it was cancelled", id, d.why);
    return -1;
}
