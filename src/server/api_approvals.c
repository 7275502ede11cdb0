/*
 * api_approvals.c - the decisions people make on runs: a supervised run's start (kind "run") and
 * each sensitive call (kind "host_call"). An approval is decided once (the store refuses a second
 * decision), never by the principal that started the run (four eyes), and its decision and
 * audit record commit together. When the last pending approval of a run is decided, the run's
 * continuation is claimed in the same transaction and the run resumes with every decision as
 * its resolutions; a supervised run starts when approved and ends "denied" when denied. Who
 * sees and decides an approval is src/gov's decision (gov_approval_may_see, _may_decide).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_runs.h"
#include "boundary.h"
#include "clock.h"
#include "connector.h"
#include "error.h"
#include "json.h"
#include "runs.h"
#include "webhooks.h"

#define API_APPROVALS_LIST_MAX   1000
#define API_APPROVALS_PAGE_BYTES ((size_t)48 << 20) /* a list answer stays under the body cap */
#define API_ANSWER_MAX           ((size_t)4 << 20) /* an answer's result: the host-call output limit */
#define API_INFORM_DEPTH         1100 /* a boundary value's depth (1000) and its tags */

/* ---------------------------------------------------------------- what an approver is shown */

/* The run's input, its console so far (from the outcome it last stopped with) and, for an
 * ad-hoc run, its source. */
struct api_inform_run {
    char id[RUNS_ID_LEN + 1]; /* the run the members below are of ("": none read) */
    char *input;
    char *console; /* a JSON array; NULL: none */
    char *source;
};

/* What an approval's JSON is built with: where it goes, the store to read what the approval
 * names (its run, its version, its connector), and the last version and connector read, kept
 * because the approvals of one answer mostly name the same ones. */
struct api_inform {
    struct buf *b;
    struct store *store;
    int64_t now_ms;
    char connector[STORE_NAME_MAX + 1]; /* functions below are this connector's ("": none) */
    char *functions;                    /* its functions (a JSON object); NULL: none */
    char template_name[STORE_NAME_MAX + 1];
    int64_t version; /* source and digest below are this version's (0: none read) */
    char *source;
    char *digest;
    struct api_inform_run run; /* the last run read (the approvals of a round come together) */
    int failed;                /* a read failed: the answer would be cut */
};

static void api_inform_run_done(struct api_inform_run *r)
{
    free(r->input);
    free(r->console);
    free(r->source);
    memset(r, 0, sizeof *r);
}

static void api_inform_done(struct api_inform *in)
{
    api_inform_run_done(&in->run);
    free(in->functions);
    free(in->source);
    free(in->digest);
}

static int api_inform_connector_fn(void *userdata, const struct store_connector *c)
{
    struct api_inform *in = userdata;
    in->functions = c->functions ? strdup(c->functions) : NULL;
    return 0;
}

static int api_inform_version_fn(void *userdata, const struct store_version *v)
{
    struct api_inform *in = userdata;
    in->source = v->source ? strdup(v->source) : NULL;
    in->digest = v->digest ? strdup(v->digest) : NULL;
    return 0;
}

static int api_inform_run_fn(void *userdata, const struct store_run *r)
{
    struct api_inform_run *ir = userdata;
    struct json_doc *outcome = NULL;
    struct al_error err;
    ir->input = r->input ? strdup(r->input) : NULL;
    ir->source = r->source ? strdup(r->source) : NULL;
    if (r->outcome &&
        json_parse(r->outcome, strlen(r->outcome), API_INFORM_DEPTH, &outcome, &err) == AL_OK) {
        const struct json_node *console = json_get(json_root(outcome), "console");
        if (console && console->type == JSON_ARRAY) {
            ir->console = strndup(console->raw, console->raw_len);
        }
    }
    json_doc_free(outcome);
    return 0;
}

/* "params": the arguments, each named by the title of its place in the function's args_schema
 * (prefixItems[i].title), else arg1, arg2, ... */
static void api_inform_params(struct api_inform *in, const struct store_approval *a)
{
    struct json_doc *args = NULL;
    struct json_doc *fns = NULL;
    struct al_error err;
    const char *dot = a->function ? strchr(a->function, '.') : NULL;
    buf_append_str(in->b, ",\"params\":[");
    if (!dot || !a->args ||
        json_parse(a->args, strlen(a->args), API_INFORM_DEPTH, &args, &err) != AL_OK ||
        json_root(args)->type != JSON_ARRAY) {
        goto out;
    }
    size_t clen = (size_t)(dot - a->function);
    if (clen < sizeof in->connector &&
        (strncmp(in->connector, a->function, clen) != 0 || in->connector[clen] != '\0')) {
        free(in->functions);
        in->functions = NULL;
        snprintf(in->connector, sizeof in->connector, "%.*s", (int)clen, a->function);
        enum store_rc rc = in->store->ops->connector_get(in->store, in->connector,
                                                         api_inform_connector_fn, in);
        in->failed |= rc != STORE_OK && rc != STORE_NOT_FOUND; /* a connector gone: arg1... */
    }
    const struct json_node *prefix = NULL;
    if (in->functions &&
        json_parse(in->functions, strlen(in->functions), API_DEPTH_MAX + 8, &fns, &err) == AL_OK) {
        const struct json_node *schema = json_get(json_get(json_root(fns), dot + 1), "args_schema");
        prefix = schema && schema->type == JSON_OBJECT ? json_get(schema, "prefixItems") : NULL;
    }
    const struct json_node *place = prefix && prefix->type == JSON_ARRAY ? prefix->child : NULL;
    size_t i = 0;
    for (const struct json_node *v = json_root(args)->child; v; v = v->next, i++) {
        const struct json_node *title =
                place && place->type == JSON_OBJECT ? json_get(place, "title") : NULL;
        buf_append_str(in->b, i ? ",{\"name\":" : "{\"name\":");
        if (title && title->type == JSON_STRING && title->str_len == strlen(title->str)) {
            api_str(in->b, title->str);
        } else {
            buf_printf(in->b, "\"arg%zu\"", i + 1);
        }
        buf_append_str(in->b, ",\"value\":");
        buf_append(in->b, v->raw, v->raw_len);
        buf_append_str(in->b, "}");
        place = place ? place->next : NULL;
    }
out:
    buf_append_str(in->b, "]");
    json_doc_free(args);
    json_doc_free(fns);
}

/* Whether the engine counts the lines of `source` as "\n" ends them (a "\r\n" is one line end):
 * not when it holds a lone "\r" or U+2028/U+2029, which the engine also takes for line ends. */
static int api_lines_agree(const char *source)
{
    for (const char *p = source; p && *p; p++) {
        if ((p[0] == '\r' && p[1] != '\n') ||
            (p[0] == '\xe2' && p[1] == '\x80' && (p[2] == '\xa8' || p[2] == '\xa9'))) {
            return 0;
        }
    }
    return 1;
}

/* "source_line": line `line` of `source` as {"line","text"}, or null when the line is not
 * known, the source has no such line or its lines are not counted as the engine counts them
 * (then no text can be shown as the line's for sure). */
static void api_inform_line(struct api_inform *in, int64_t line, const char *source)
{
    const char *p = api_lines_agree(source) ? source : NULL;
    for (int64_t n = 1; p && n < line; n++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (line <= 0 || !p || (*p == '\0' && line > 1 && p[-1] != '\n')) {
        buf_append_str(in->b, ",\"source_line\":null");
        return;
    }
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0 && p[len - 1] == '\r') {
        len--;
    }
    buf_printf(in->b, ",\"source_line\":{\"line\":%" PRId64 ",\"text\":", line);
    json_write_string(in->b, p, len);
    buf_append_str(in->b, "}");
}

/* The members that inform the decision: params, input, console, source_line, waiting_ms and
 * the version's digest. */
static void api_inform(struct api_inform *in, const struct store_approval *a)
{
    api_inform_params(in, a);
    if (strcmp(in->run.id, a->run) != 0) {
        api_inform_run_done(&in->run);
        snprintf(in->run.id, sizeof in->run.id, "%s", a->run);
        enum store_rc rc = in->store->ops->run_get(in->store, a->run, api_inform_run_fn, &in->run);
        in->failed |= rc != STORE_OK && rc != STORE_NOT_FOUND;
    }
    buf_append_str(in->b, ",\"input\":");
    buf_append_str(in->b, in->run.input ? in->run.input : "null");
    buf_append_str(in->b, ",\"console\":");
    buf_append_str(in->b, in->run.console ? in->run.console : "[]");
    const char *source = in->run.source;
    if (a->template_name[0] &&
        (strcmp(in->template_name, a->template_name) != 0 || in->version != a->version)) {
        free(in->source);
        free(in->digest);
        in->source = NULL;
        in->digest = NULL;
        snprintf(in->template_name, sizeof in->template_name, "%s", a->template_name);
        in->version = a->version;
        enum store_rc rc = in->store->ops->version_get(in->store, a->template_name, a->version,
                                                       api_inform_version_fn, in);
        in->failed |= rc != STORE_OK && rc != STORE_NOT_FOUND;
    }
    if (a->template_name[0]) {
        source = in->source;
        api_member(in->b, ",\"digest\":", in->digest);
    } else {
        buf_append_str(in->b, ",\"digest\":null");
    }
    api_inform_line(in, a->line, source);
    /* how long it has waited for a person (pending), or waited (decided) */
    int64_t created = runs_time_ms(a->created);
    int64_t until = a->decided ? runs_time_ms(a->decided) : in->now_ms;
    buf_printf(in->b, ",\"waiting_ms\":%" PRId64, until > created ? until - created : 0);
}

/* Appends the approval's API object to the api_inform userdata; 0 (a store_approval_fn). */
static int api_approval_json(void *userdata, const struct store_approval *a)
{
    struct api_inform *in = userdata;
    struct buf *b = in->b;
    api_member(b, "{\"id\":", a->id);
    api_member(b, ",\"kind\":", a->kind);
    api_member(b, ",\"status\":", a->status);
    api_member(b, ",\"run\":", a->run);
    if (a->template_name[0]) {
        api_member(b, ",\"template\":", a->template_name);
        buf_printf(b, ",\"version\":%" PRId64, a->version);
    } else {
        buf_append_str(b, ",\"template\":null,\"version\":null");
    }
    api_member(b, ",\"department\":", a->department);
    api_member(b, ",\"function\":", a->function);
    buf_append_str(b, ",\"args\":");
    if (a->args) {
        json_write_compact(b, a->args, strlen(a->args));
    } else {
        buf_append_str(b, "null");
    }
    api_member(b, ",\"requested_by\":", a->requested_by);
    api_member(b, ",\"created\":", a->created);
    api_member(b, ",\"decided_by\":", a->decided_by);
    api_member(b, ",\"decided\":", a->decided);
    api_member(b, ",\"comment\":", a->comment);
    if (strcmp(a->kind, "in_doubt") == 0) {
        /* the call a dead execution sent whose answer nobody recorded: where it went and when,
         * under which key, and what a person said it returned */
        api_member(b, ",\"connector\":", a->connector);
        api_member(b, ",\"sent\":", a->sent);
        api_member(b, ",\"idempotency_key\":", a->idempotency_key);
        buf_printf(b, ",\"call\":%" PRId64 ",\"result\":", a->call_seq);
        if (a->result) {
            json_write_compact(b, a->result, strlen(a->result));
        } else {
            buf_append_str(b, "null");
        }
    }
    api_inform(in, a);
    buf_append_str(b, "}");
    return 0;
}

struct api_approval_list {
    const struct gov_principal *who;
    struct buf *b;
    int n;
    int limit;
    struct api_inform in; /* its b is each item's */
};

static int api_approval_item(void *userdata, const struct store_approval *a)
{
    struct api_approval_list *l = userdata;
    struct gov_approval g = { a->id, a->run, a->department, a->requested_by,
                              api_approval_state(a->status) };
    struct gov_decision d;
    if (!gov_approval_may_see(l->who, &g, &d)) {
        return 0;
    }
    if (l->n == l->limit) {
        return 1;
    }
    /* the newest first, as many as fit the answer's cap */
    struct buf item;
    buf_init(&item, API_APPROVALS_PAGE_BYTES);
    l->in.b = &item;
    api_approval_json(&l->in, a);
    int fits = item.data && l->b->len + item.len + 4 <= API_APPROVALS_PAGE_BYTES;
    if (fits) {
        buf_append_str(l->b, l->n++ ? "," : "");
        buf_append(l->b, item.data, item.len);
    }
    buf_done(&item);
    return !fits;
}

void api_approvals_list(struct api_ctx *ctx)
{
    struct api_approval_list l;
    memset(&l, 0, sizeof l);
    l.who = &ctx->who->gov;
    l.b = &ctx->resp->body;
    l.limit = API_APPROVALS_LIST_MAX;
    l.in.store = ctx->store;
    l.in.now_ms = clock_wall_ms();
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    const char *limit = http_query(ctx->req, "limit");
    if (limit) {
        char *end = NULL;
        long n = strtol(limit, &end, 10);
        if (*limit == '\0' || *end != '\0' || n < 1 || n > API_APPROVALS_LIST_MAX) {
            api_error(ctx, 400, "INVALID_REQUEST", "limit must be 1..%d", API_APPROVALS_LIST_MAX);
            return;
        }
        l.limit = (int)n;
    }
    const char *status = http_query(ctx->req, "status");
    if (status && api_approval_state(status) == GOV_APPROVAL_STATES) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "status must be pending, approved, denied, cancelled or answered");
        return;
    }
    const char *run = http_query(ctx->req, "run");
    if (run && (!run[0] || strlen(run) > RUNS_ID_LEN)) {
        api_error(ctx, 400, "INVALID_REQUEST", "run must be a run id");
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    enum store_rc rc =
            ctx->store->ops->approval_list(ctx->store, run, status, api_approval_item, &l);
    api_inform_done(&l.in);
    if (rc != STORE_OK || l.in.failed) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

/* ---------------------------------------------------------------- runs that waited too long */

#define API_EXPIRED "expired: " /* how an expired approval's comment starts */

static int api_ttl_fn(void *userdata, const struct store_department *d)
{
    *(int64_t *)userdata =
            d->approval_ttl_ms > 0 ? d->approval_ttl_ms : API_APPROVAL_TTL_DEFAULT_MS;
    return 0;
}

/* Department `department`'s approval_ttl_ms into *ret_ttl_ms (the default for one gone). */
static enum store_rc api_approval_ttl(struct store *s, const char *department, int64_t *ret_ttl_ms)
{
    *ret_ttl_ms = API_APPROVAL_TTL_DEFAULT_MS;
    enum store_rc rc = s->ops->department_get(s, department, api_ttl_fn, ret_ttl_ms);
    return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

/* What ends an expired run: the reason its records and its approvals give. */
static void api_expired_why(char *why, size_t size, const char *run, const char *department,
                            int64_t ttl_ms)
{
    snprintf(why, size,
             API_EXPIRED "run %s waited for a person longer than department %s allows "
                         "(approval_ttl_ms %" PRId64 ")",
             run, department, ttl_ms);
}

/* The pending approvals of one run: their ids, and when the oldest was opened. */
struct api_pending {
    char (*ids)[RUNS_ID_LEN + 1];
    size_t n;
    int64_t oldest_ms; /* 0: none */
    int failed;
};

static int api_pending_fn(void *userdata, const struct store_approval *a)
{
    struct api_pending *p = userdata;
    char(*ids)[RUNS_ID_LEN + 1] = realloc(p->ids, (p->n + 1) * sizeof *ids);
    if (!ids) {
        p->failed = 1;
        return 1;
    }
    p->ids = ids;
    snprintf(p->ids[p->n++], sizeof *p->ids, "%s", a->id);
    int64_t created = runs_time_ms(a->created);
    if (created > 0 && (p->oldest_ms == 0 || created < p->oldest_ms)) {
        p->oldest_ms = created;
    }
    return 0;
}

/* Inside a transaction: ends run `run` of `department` if it still waits for a person with an
 * approval pending for ttl_ms or longer at now_ms - cancelled, error ABORTED "expired: ...", its
 * pending approvals cancelled with that comment (approval.cancel), its continuation dropped, a
 * run.cancel and a run.end record (actor airlockd). *ret_expired says whether it did. */
static enum store_rc api_run_expire(struct store *s, const char *run, const char *department,
                                    int64_t now_ms, int *ret_expired)
{
    struct api_pending p = { NULL, 0, 0, 0 };
    char why[512];
    int64_t ttl_ms = 0;
    struct buf d;
    buf_init(&d, 4096);
    *ret_expired = 0;
    enum store_rc rc = api_approval_ttl(s, department, &ttl_ms);
    if (rc == STORE_OK) {
        rc = s->ops->approval_list(s, run, "pending", api_pending_fn, &p);
        rc = rc == STORE_OK && p.failed ? STORE_ERROR : rc;
    }
    if (rc != STORE_OK || p.n == 0 || p.oldest_ms == 0 || now_ms - p.oldest_ms < ttl_ms) {
        goto out;
    }
    api_expired_why(why, sizeof why, run, department, ttl_ms);
    rc = s->ops->run_set_status(s, run, "awaiting_approval", "cancelled", NULL);
    if (rc == STORE_CONFLICT) {
        rc = STORE_OK; /* not waiting for a person any more: queued, resumed, ended */
        goto out;
    }
    rc = rc == STORE_OK ? s->ops->run_set_continuation(s, run, NULL) : rc;
    rc = rc == STORE_OK ? s->ops->call_clear(s, run) : rc;
    for (size_t i = 0; i < p.n && rc == STORE_OK; i++) {
        rc = s->ops->approval_decide(s, p.ids[i], "cancelled", "airlockd", why);
        buf_reset(&d);
        api_member(&d, "{\"approval\":", p.ids[i]);
        api_member(&d, ",\"run\":", run);
        api_member(&d, ",\"reason\":", why);
        buf_append_str(&d, "}");
        if (rc == STORE_OK) {
            rc = d.data ? s->ops->audit_append(s, "airlockd", "approval.cancel", p.ids[i],
                                               department, d.data, NULL)
                        : STORE_ERROR;
        }
    }
    rc = rc == STORE_OK ? api_run_set_aborted(s, run, why) : rc;
    if (rc == STORE_OK) {
        buf_reset(&d);
        api_member(&d, "{\"run\":", run);
        api_member(&d, ",\"reason\":", why);
        buf_append_str(&d, "}");
        rc = d.data ? s->ops->audit_append(s, "airlockd", "run.cancel", run, department, d.data,
                                           NULL)
                    : STORE_ERROR;
    }
    if (rc == STORE_OK) {
        buf_reset(&d);
        api_member(&d, "{\"run\":", run);
        api_member(&d,
                   ",\"status\":\"cancelled\",\"error\":{\"code\":\"ABORTED\",\"message\":", why);
        buf_append_str(&d, "}}");
        rc = d.data ? s->ops->audit_append(s, "airlockd", "run.end", run, department, d.data, NULL)
                    : STORE_ERROR;
    }
    *ret_expired = rc == STORE_OK;
out:
    free(p.ids);
    buf_done(&d);
    return rc;
}

/* One run to look at again in a writer job, and whether it expired. */
struct api_expire {
    char run[RUNS_ID_LEN + 1];
    char department[STORE_NAME_MAX + 1];
    int64_t now_ms;
    int expired;
};

static enum store_rc api_expire_fn(struct writer_tx *tx, void *arg)
{
    struct api_expire *e = arg;
    struct store *s = writer_store(tx);
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = api_run_expire(s, e->run, e->department, e->now_ms, &e->expired);
        rc = api_tx_end(s, rc);
    }
    return rc;
}

/* The runs with an approval pending past their department's approval_ttl_ms. */
struct api_due {
    struct store *s;
    int64_t now_ms;
    char department[STORE_NAME_MAX + 1]; /* ttl_ms is this department's ("": none read) */
    int64_t ttl_ms;
    struct api_expire *runs;
    size_t n;
    int failed;
};

static int api_due_fn(void *userdata, const struct store_approval *a)
{
    struct api_due *d = userdata;
    if (strcmp(d->department, a->department) != 0) {
        snprintf(d->department, sizeof d->department, "%s", a->department);
        if (api_approval_ttl(d->s, a->department, &d->ttl_ms) != STORE_OK) {
            d->failed = 1;
            return 1;
        }
    }
    int64_t created = runs_time_ms(a->created);
    if (created <= 0 || d->now_ms - created < d->ttl_ms) {
        return 0;
    }
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->runs[i].run, a->run) == 0) {
            return 0;
        }
    }
    struct api_expire *runs = realloc(d->runs, (d->n + 1) * sizeof *runs);
    if (!runs) {
        d->failed = 1;
        return 1;
    }
    d->runs = runs;
    struct api_expire *e = &runs[d->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->run, sizeof e->run, "%s", a->run);
    snprintf(e->department, sizeof e->department, "%s", a->department);
    e->now_ms = d->now_ms;
    return 0;
}

void api_approvals_expire(struct readers *readers, struct writer *writer, int64_t now_ms)
{
    struct api_due d;
    memset(&d, 0, sizeof d);
    d.now_ms = now_ms;
    d.s = readers_take(readers);
    if (!d.s) {
        return;
    }
    enum store_rc rc = d.s->ops->approval_pending_list(d.s, api_due_fn, &d);
    readers_give(readers, d.s);
    if (rc != STORE_OK || d.failed) {
        fprintf(stderr, "{\"log\":\"expire\",\"error\":\"store\"}\n");
    }
    for (size_t i = 0; i < d.n; i++) {
        if (writer_call(writer, api_expire_fn, &d.runs[i]) != STORE_OK) {
            fprintf(stderr, "{\"log\":\"expire\",\"run\":\"%s\",\"error\":\"store\"}\n",
                    d.runs[i].run);
        }
    }
    free(d.runs);
}

/* ---------------------------------------------------------------- deciding */

/* What deciding an approval reads of it. */
struct api_approval_copy {
    char id[RUNS_ID_LEN + 1];
    char run[RUNS_ID_LEN + 1];
    char kind[16];
    char department[STORE_NAME_MAX + 1];
    char requested_by[STORE_NAME_MAX + 1];
    char expired[512];     /* cancelled because its run waited too long: the reason; else "" */
    struct gov_approval g; /* its strings point into the members above */
};

static int api_approval_copy_fn(void *userdata, const struct store_approval *a)
{
    struct api_approval_copy *c = userdata;
    snprintf(c->expired, sizeof c->expired, "%s",
             a->comment && strncmp(a->comment, API_EXPIRED, strlen(API_EXPIRED)) == 0 &&
                             strcmp(a->status, "cancelled") == 0
                     ? a->comment
                     : "");
    snprintf(c->id, sizeof c->id, "%s", a->id);
    snprintf(c->run, sizeof c->run, "%s", a->run);
    snprintf(c->kind, sizeof c->kind, "%s", a->kind);
    snprintf(c->department, sizeof c->department, "%s", a->department);
    snprintf(c->requested_by, sizeof c->requested_by, "%s", a->requested_by);
    c->g = (struct gov_approval){ c->id, c->run, c->department, c->requested_by,
                                  api_approval_state(a->status) };
    return 0;
}

/* What a waiting run's approvals say: how many are pending, whether its start was approved
 * (kind run), and the decided, not yet consumed host calls as resolutions. */
struct api_decisions {
    size_t n;
    size_t cap;
    int total; /* approvals of the run, whatever their state: none for a run never interrupted */
    int pending;
    int start_approved;
    struct runs_resolution *res;
    /* calls in doubt decided and not yet consumed: the run goes on from its journal, each
     * denied or answered one journaled first (settled), the approved ones sent again */
    int in_doubt;
    size_t nsettled;
    struct api_settled {
        int64_t call_seq;
        int64_t decided_ms;
        int kind; /* enum store_journal_kind */
        char *function;
        char *args_sha256;
        char *key;
        char *answer; /* the thrown message, or the value (boundary JSON) */
    } * settled;
};

/* Keeps a denied or answered call in doubt for its journal entry: 0, or -1 out of memory. */
static int api_settled_add(struct api_decisions *d, const struct store_approval *a, int answered)
{
    char message[4200];
    struct api_settled *settled = realloc(d->settled, (d->nsettled + 1) * sizeof *settled);
    if (!settled) {
        return -1;
    }
    d->settled = settled;
    struct api_settled *e = &settled[d->nsettled];
    memset(e, 0, sizeof *e);
    /* a denied call throws in the guest, as a connector's error would */
    snprintf(message, sizeof message, a->comment && a->comment[0] ? "in doubt: %s" : "in doubt",
             a->comment ? a->comment : "");
    e->call_seq = a->call_seq;
    e->decided_ms = runs_time_ms(a->decided);
    e->kind = answered ? STORE_JOURNAL_VALUE : STORE_JOURNAL_THROW;
    e->function = strdup(a->function ? a->function : "");
    e->args_sha256 = strdup(a->args_sha256 ? a->args_sha256 : "");
    e->key = strdup(a->idempotency_key ? a->idempotency_key : "");
    e->answer = strdup(answered ? (a->result ? a->result : "null") : message);
    d->nsettled++;
    return !e->function || !e->args_sha256 || !e->key || !e->answer ? -1 : 0;
}

/* Adds a resolution, its strings copied: 0, or -1 out of memory. */
static int api_resolution_add(struct api_decisions *d, const char *interruption, int approved,
                              const char *comment)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        struct runs_resolution *res = realloc(d->res, cap * sizeof *res);
        if (!res) {
            return -1;
        }
        d->res = res;
        d->cap = cap;
    }
    struct runs_resolution *r = &d->res[d->n];
    r->interruption = strdup(interruption);
    r->comment = comment ? strdup(comment) : NULL;
    r->approved = approved;
    if (!r->interruption || (comment && !r->comment)) {
        free((char *)r->interruption);
        free((char *)r->comment);
        return -1;
    }
    d->n++;
    return 0;
}

static int api_decision_fn(void *userdata, const struct store_approval *a)
{
    struct api_decisions *d = userdata;
    enum gov_approval_state state = api_approval_state(a->status);
    d->total++;
    if (state == GOV_APPROVAL_PENDING) {
        d->pending++;
        return 0;
    }
    if (a->consumed || state == GOV_APPROVAL_CANCELLED) {
        return 0;
    }
    if (strcmp(a->kind, "run") == 0) {
        d->start_approved |= state == GOV_APPROVAL_APPROVED;
        return 0;
    }
    if (strcmp(a->kind, "in_doubt") == 0) {
        d->in_doubt++;
        return state != GOV_APPROVAL_APPROVED &&
               api_settled_add(d, a, state == GOV_APPROVAL_ANSWERED) != 0;
    }
    return a->interruption &&
           api_resolution_add(d, a->interruption, state == GOV_APPROVAL_APPROVED, a->comment) != 0;
}

static void api_decisions_done(struct api_decisions *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free((char *)d->res[i].interruption);
        free((char *)d->res[i].comment);
    }
    free(d->res);
    for (size_t i = 0; i < d->nsettled; i++) {
        free(d->settled[i].function);
        free(d->settled[i].args_sha256);
        free(d->settled[i].key);
        free(d->settled[i].answer);
    }
    free(d->settled);
}

struct api_row_copy {
    struct api_run_copy copy;
    char *host_calls; /* the calls its outcome lists so far (a JSON array), for the resumed leg */
};

/* Copies the run; out of memory, its status is NULL (as if there were nothing to resume). */
static int api_row_copy_fn(void *userdata, const struct store_run *row)
{
    struct api_row_copy *c = userdata;
    struct json_doc *doc = NULL;
    struct al_error err;
    if (api_run_copy_set(&c->copy, row) != 0) {
        return 0;
    }
    if (row->outcome && json_parse(row->outcome, strlen(row->outcome), 512, &doc, &err) == AL_OK) {
        const struct json_node *calls = json_get(json_root(doc), "host_calls");
        if (calls && calls->type == JSON_ARRAY) {
            c->host_calls = strndup(calls->raw, calls->raw_len);
        }
    }
    json_doc_free(doc);
    return 0;
}

static void api_row_copy_done(struct api_row_copy *c)
{
    api_run_copy_done(&c->copy);
    free(c->host_calls);
}

/* A decided run that cannot be planned ends failed, with its run.end. */
static enum store_rc api_run_end_unresumable(struct store *s, const struct store_run *row,
                                             const char *from, const char *why)
{
    struct buf o;
    struct buf d;
    buf_init(&o, 4096);
    buf_init(&d, 4096);
    api_member(&o, "{\"error\":{\"code\":\"CONFLICT\",\"name\":\"\",\"message\":", why);
    buf_append_str(&o, ",\"stack\":\"\"},\"console\":[],\"stats\":{},\"host_calls\":[]}");
    api_member(&d, "{\"run\":", row->id);
    api_member(&d, ",\"status\":\"failed\",\"error\":{\"code\":\"CONFLICT\",\"message\":", why);
    buf_append_str(&d, "}}");
    if (!o.data || !d.data) { /* out of memory: nothing begun, nothing to roll back */
        buf_done(&o);
        buf_done(&d);
        return STORE_ERROR;
    }
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->run_set_status(s, row->id, from, "failed", o.data);
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_set_continuation(s, row->id, NULL);
    }
    if (rc == STORE_OK) {
        rc = s->ops->call_clear(s, row->id); /* a retried execution's row and marks */
    }
    if (rc == STORE_OK) {
        rc = s->ops->audit_append(s, "airlockd", "run.end", row->id, row->department, d.data, NULL);
    }
    if (rc == STORE_OK) {
        rc = webhooks_run_failed(s, row->id, row->department, row->template_name, row->version,
                                 row->principal);
    }
    rc = api_tx_end(s, rc);
    buf_done(&o);
    buf_done(&d);
    return rc == STORE_CONFLICT ? STORE_OK : rc;
}

/* ---------------------------------------------------------------- recovery from the journal */

struct api_journal {
    struct runs_plan *plan;
    struct store *store; /* the journal's */
    int failed;
};

static int api_journal_fn(void *userdata, const struct store_journal_entry *e)
{
    struct api_journal *j = userdata;
    j->failed = runs_plan_add_journal(j->plan, j->store, e) != 0;
    return j->failed;
}

/* A sensitive call a person decided: a recovery that reaches it live again keeps the decision
 * (approved: sent under its interruption id; denied: it throws), never asks anew. */
static int api_decided_fn(void *userdata, const struct store_approval *a)
{
    struct api_journal *j = userdata;
    enum gov_approval_state state = api_approval_state(a->status);
    if (strcmp(a->kind, "host_call") != 0 || a->call_seq <= 0 ||
        (state != GOV_APPROVAL_APPROVED && state != GOV_APPROVAL_DENIED)) {
        return 0;
    }
    j->failed = runs_plan_add_decided(j->plan, a) != 0;
    return j->failed;
}

static int api_settled_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct api_settled *)a)->call_seq;
    int64_t y = ((const struct api_settled *)b)->call_seq;
    return (x > y) - (x < y);
}

/* Journals the calls in doubt a person denied or answered, after the journal's last entry (in
 * call order, each at the guest clock of its decision or of the entry before, the later), and
 * gives them to the plan: the guest's call throws "in doubt: ..." or returns the value, and
 * nothing is sent. */
static enum store_rc api_settle(struct store *s, const char *run, struct api_decisions *d,
                                struct runs_plan *plan)
{
    enum store_rc rc = STORE_OK;
    if (d->nsettled > 1) {
        qsort(d->settled, d->nsettled, sizeof *d->settled, api_settled_cmp);
    }
    for (size_t i = 0; i < d->nsettled && rc == STORE_OK; i++) {
        const struct api_settled *x = &d->settled[i];
        char call_id[24];
        int64_t clock_ms = x->decided_ms;
        if (plan->njournal > 0 && plan->journal[plan->njournal - 1].clock_ms > clock_ms) {
            clock_ms = plan->journal[plan->njournal - 1].clock_ms;
        }
        snprintf(call_id, sizeof call_id, "%" PRId64, x->call_seq);
        struct store_journal_entry e = {
            .position = (int64_t)plan->njournal + 1,
            .call_id = call_id,
            .function = x->function,
            .args_sha256 = x->args_sha256,
            .idempotency_key = x->key,
            .kind = x->kind,
            .sync = 0, /* a connector's functions are asynchronous */
            .clock_ms = clock_ms,
            .answer = (const unsigned char *)x->answer,
            .answer_len = strlen(x->answer),
        };
        rc = s->ops->journal_append(s, run, &e, 1);
        if (rc == STORE_OK && runs_plan_add_journal(plan, s, &e) != 0) {
            rc = STORE_ERROR;
        }
    }
    return rc;
}

/* A run whose execution died (its node, a drain) goes on from its journal, in the claim's
 * transaction: counted, recorded (run.recover: the node resuming it and from_call, the
 * position of the first answer it will take live), and its plan given every answer, with the
 * seed and clock its start recorded, the calls in doubt a person settled (`d`, NULL for none)
 * and, for a run resumed after approvals, the decisions on its sensitive calls. (Whether it
 * goes on at all, nodes_take_over decided.) */
static enum store_rc api_run_recovering(struct store *s, struct runs *runs,
                                        const struct store_run *row, struct runs_plan *plan,
                                        struct api_decisions *d)
{
    struct api_journal j = { plan, s, 0 };
    struct buf b;
    int64_t recovered = 0;
    uint64_t seed = 0;
    buf_init(&b, 4096);
    enum store_rc rc;
    rc = s->ops->run_add_recovered(s, row->id, &recovered);
    if (rc == STORE_OK) {
        rc = s->ops->journal_read(s, row->id, 0, api_journal_fn, &j);
        if (rc == STORE_OK && j.failed) {
            rc = STORE_ERROR;
        }
    }
    if (rc == STORE_OK) {
        rc = s->ops->approval_list(s, row->id, NULL, api_decided_fn, &j);
        if (rc == STORE_OK && j.failed) {
            rc = STORE_ERROR;
        }
    }
    if (rc == STORE_OK && d) {
        rc = api_settle(s, row->id, d, plan);
    }
    if (rc == STORE_OK && row->seed && strlen(row->seed) == 16) {
        char *end = NULL;
        seed = strtoull(row->seed, &end, 16);
        plan->has_seed = end && *end == '\0';
        plan->seed = seed;
    }
    if (row->clock_ms > 0) {
        plan->clock_ms = row->clock_ms;
    }
    api_member(&b, "{\"run\":", row->id);
    api_member(&b, ",\"node\":", runs_node(runs) ? runs_node(runs) : "");
    buf_printf(&b, ",\"from_call\":%zu,\"recovered\":%" PRId64 "}", plan->njournal + 1, recovered);
    if (rc == STORE_OK) {
        rc = b.data ? s->ops->audit_append(s, "airlockd", "run.recover", row->id, row->department,
                                           b.data, NULL)
                    : STORE_ERROR;
    }
    buf_done(&b);
    return rc;
}

/* A supervised fork whose start a person approved starts from the journal prefix it was given
 * at its creation, at its original's seed and clock (its origin, recorded then), its calls
 * from at_call on live: as an autonomous fork starts at once (api_runs.c). */
static enum store_rc api_run_forked(struct store *s, const struct store_run *row,
                                    struct runs_plan *plan)
{
    struct api_journal j = { plan, s, 0 };
    char *end = NULL;
    uint64_t seed = row->seed ? strtoull(row->seed, &end, 16) : 0;
    if (!row->seed || strlen(row->seed) != 16 || !end || *end || row->clock_ms <= 0) {
        return STORE_ERROR;
    }
    enum store_rc rc = s->ops->journal_read(s, row->id, 0, api_journal_fn, &j);
    if (rc == STORE_OK && j.failed) {
        rc = STORE_ERROR;
    }
    plan->has_seed = 1;
    plan->seed = seed;
    plan->clock_ms = row->clock_ms;
    plan->fork_at_call = row->at_call;
    return rc;
}

/* ---------------------------------------------------------------- executions (several nodes) */

/* A claimed run with an execution row was put back in the queue after its execution died
 * (nodes.c): it goes on from its journal. */
static int api_execution_fn(void *userdata, const struct store_execution *e)
{
    (void)e;
    *(int *)userdata = 1;
    return 0;
}

/* 1 when this node has an execution of run `id` in flight (or cannot tell: out of memory). */
static int api_run_executing_here(struct runs *runs, const char *id)
{
    char(*ids)[RUNS_ID_LEN + 1] = NULL;
    size_t n = 0;
    int found = runs_active_ids(runs, &ids, &n) != 0;
    for (size_t i = 0; i < n && !found; i++) {
        found = strcmp(ids[i], id) == 0;
    }
    free(ids);
    return found;
}

/* Resumes (or starts, when supervised) a run whose approvals are all decided, on this node:
 * the run `run_id` waiting for a person, or with `node` (run_id NULL) the oldest run in the
 * queue, claimed for this node in the same transaction that claims its continuation (then
 * *ret_claimed says whether there was one). A failure with a reason of its own (why) hands it
 * to reterr; the store's own failures leave reterr alone (ops->errmsg says why). */
static enum store_rc api_run_go(struct writer_tx *tx, struct secretbox_keys *secret_keys,
                                struct runs *runs, const char *run_id, const char *node,
                                int *ret_claimed, struct al_error *reterr)
{
    struct store *s = writer_store(tx);
    struct api_decisions decisions;
    struct api_row_copy run;
    int retry = 0; /* an execution of it died: a recovery */
    struct runs_plan *plan = NULL;
    struct al_error why; /* the reason the run cannot go on; message "" while there is none */
    char *token = NULL;
    char claimed[STORE_NAME_MAX + 1] = "";
    const char *from = run_id ? "awaiting_approval" : "queued";
    enum store_rc rc = STORE_OK;
    int in_tx = 0;
    int recover = 0;
    int forked = 0; /* a supervised fork, its start approved */
    int64_t clock_ms = 0;
    memset(&decisions, 0, sizeof decisions);
    memset(&run, 0, sizeof run);
    memset(&why, 0, sizeof why);
    if (runs_hold(runs) != 0) {
        return STORE_OK; /* draining: the next start, or another node, resumes it */
    }
    int held = 1;
    if (!run_id) {
        rc = s->ops->tx_begin(s);
        in_tx = rc == STORE_OK;
        if (rc == STORE_OK) {
            rc = s->ops->run_claim_queued(s, node, claimed);
        }
        if (rc != STORE_OK) {
            goto out;
        }
        *ret_claimed = 1;
        run_id = claimed;
        if (api_run_executing_here(runs, run_id)) {
            /* this node was paused past its lease and the run, taken over and queued again,
             * is still executing here: that execution finds out at its next mark or record.
             * Not a second one beside it: the rollback puts the run back in the queue */
            *ret_claimed = 0;
            goto out;
        }
    }
    rc = s->ops->run_get(s, run_id, api_row_copy_fn, &run);
    if (rc != STORE_OK || !run.copy.row.status ||
        api_run_state(run.copy.row.status) !=
                (claimed[0] ? GOV_RUN_RUNNING : GOV_RUN_AWAITING_APPROVAL)) {
        goto out;
    }
    int settle = 0; /* set before `plan` only when the run is not recovered */
    if (claimed[0]) {
        /* an execution of it died (its node, a drain): it goes on from its journal, at the
         * start its first execution recorded */
        rc = s->ops->execution_get(s, run_id, api_execution_fn, &retry);
        if (rc == STORE_NOT_FOUND) {
            rc = STORE_OK;
        }
        if (rc == STORE_OK && retry) {
            recover = 1;
            clock_ms = run.copy.row.clock_ms;
            goto plan;
        }
    }
    rc = rc == STORE_OK ? s->ops->approval_list(s, run_id, NULL, api_decision_fn, &decisions) : rc;
    /* a queued run never interrupted (queued at its start) starts afresh */
    int fresh = rc == STORE_OK && claimed[0] && decisions.total == 0 && !run.host_calls;
    /* a run whose calls in doubt a person decided goes on from its journal */
    settle = rc == STORE_OK && decisions.pending == 0 && decisions.in_doubt > 0;
    if (!fresh && !settle &&
        (rc != STORE_OK || decisions.pending > 0 ||
         (!decisions.start_approved && decisions.n == 0))) {
        if (rc == STORE_OK && claimed[0]) {
            /* queued with nothing to resume from (never made so): it ends, or it would be
             * claimed again and again */
            s->ops->tx_rollback(s);
            in_tx = 0;
            error_set(&why, AL_INTERNAL_ERROR, "run %s was queued without its decisions", run_id);
            rc = api_run_end_unresumable(s, &run.copy.row, from, why.message);
        }
        goto out;
    }
    if (!in_tx) {
        rc = s->ops->tx_begin(s);
        in_tx = rc == STORE_OK;
    }
    if (rc == STORE_OK && !decisions.start_approved && !fresh && !settle) {
        rc = s->ops->run_take_continuation(s, run_id, &token);
    }
    if (rc == STORE_OK) {
        rc = s->ops->approval_consume(s, run_id);
    }
    if (rc == STORE_OK && !claimed[0]) {
        rc = s->ops->run_set_status(s, run_id, "awaiting_approval", "running", NULL);
    }
    if (rc == STORE_OK && !claimed[0] && runs_node(runs)) {
        rc = s->ops->run_set_node(s, run_id, runs_node(runs)); /* this node executes it now */
    }
    clock_ms = token ? 0 : runs_now_ms(); /* a start from the input starts its clock now */
    if (decisions.start_approved && run.copy.row.forked_from) {
        /* its origin is its original's, recorded at its creation */
        forked = 1;
        clock_ms = run.copy.row.clock_ms;
        goto plan;
    }
    if (settle) {
        /* from its journal, at the start its first execution recorded: no execution row (as a
         * start from the input has none), and its origin stays */
        recover = 1;
        clock_ms = run.copy.row.clock_ms;
        for (size_t i = 0; i < decisions.nsettled && rc == STORE_OK; i++) {
            if (decisions.settled[i].call_seq <= 0) {
                error_set(&why, AL_INTERNAL_ERROR,
                          "run %s: a call in doubt has no call number to answer", run_id);
                rc = STORE_CONFLICT;
            }
        }
        goto plan;
    }
    if (rc == STORE_OK && clock_ms > 0) {
        /* where a replay of its journal starts, should this execution die */
        rc = s->ops->run_set_origin(s, run_id, runs_seed(runs, run_id), clock_ms);
    }
plan: /* in the transaction begun above, or rc says why not */
    if (rc == STORE_OK) {
        /* refuses a version that is no longer approved */
        rc = api_run_plan(s, secret_keys, runs_mount_roots(runs), &run.copy.row, &plan, &why);
    }
    if (rc == STORE_OK) {
        plan->clock_ms = clock_ms;
    }
    if (rc == STORE_OK && forked) {
        rc = api_run_forked(s, &run.copy.row, plan);
    }
    if (rc == STORE_OK && recover) {
        rc = api_run_recovering(s, runs, &run.copy.row, plan, settle ? &decisions : NULL);
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
        in_tx = 0;
    }
    if (rc != STORE_OK) {
        s->ops->tx_rollback(s);
        in_tx = 0;
        if (rc == STORE_NOT_FOUND && claimed[0]) {
            /* queued, but its continuation is gone: it would be claimed again and again */
            error_set(&why, AL_INTERNAL_ERROR, "run %s was queued without its continuation",
                      run_id);
            rc = STORE_CONFLICT;
        }
        if ((rc == STORE_CONFLICT || (rc == STORE_ERROR && retry)) && why.message[0]) {
            /* it cannot run any more (its version revoked meanwhile, a connector gone): it ends
             * rather than wait for nothing; a claimed run is back in the queue after the
             * rollback, and ends from there */
            run.copy.row.status = from;
            enum store_rc frc = api_run_end_unresumable(s, &run.copy.row, from, why.message);
            if (frc != STORE_OK) {
                rc = frc;
            }
        }
        goto out;
    }
    held = 0;
    plan->prior_calls = run.host_calls; /* the run's host_calls go on from these */
    run.host_calls = NULL;
    runs_launch(runs, tx, plan, token, decisions.res, decisions.n, NULL);
    plan = NULL;
out:
    if (in_tx) {
        s->ops->tx_rollback(s);
    }
    if (held) {
        runs_unhold(runs);
    }
    runs_plan_free(plan);
    free(token);
    api_decisions_done(&decisions);
    api_row_copy_done(&run);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND && why.message[0] && reterr) {
        *reterr = why;
    }
    return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

/* With several nodes a run whose approvals are all decided goes to the queue (status queued),
 * and whichever node claims it first resumes it (api_run_claim); the deciding node is only
 * the first to be told. With one node it resumes here. */
static void api_kick(void *arg, int committed)
{
    if (committed) {
        runs_kick(arg);
    }
}

enum store_rc api_run_resume(struct writer_tx *tx, struct secretbox_keys *secret_keys,
                             struct runs *runs, const char *run_id, struct al_error *reterr)
{
    struct store *s = writer_store(tx);
    struct api_decisions decisions;
    struct api_row_copy run;
    enum store_rc rc;
    if (!runs_node(runs)) {
        return api_run_go(tx, secret_keys, runs, run_id, NULL, NULL, reterr);
    }
    memset(&decisions, 0, sizeof decisions);
    memset(&run, 0, sizeof run);
    rc = s->ops->run_get(s, run_id, api_row_copy_fn, &run);
    if (rc == STORE_OK && run.copy.row.status &&
        api_run_state(run.copy.row.status) == GOV_RUN_AWAITING_APPROVAL) {
        rc = s->ops->approval_list(s, run_id, NULL, api_decision_fn, &decisions);
        if (rc == STORE_OK && decisions.pending == 0 &&
            (decisions.start_approved || decisions.n > 0 || decisions.in_doubt > 0)) {
            /* of several deciders queueing at once, one moves it; the others find it moved.
             * Every node hears of it once this commits. */
            rc = s->ops->tx_begin(s);
            if (rc == STORE_OK) {
                rc = s->ops->run_set_status(s, run_id, "awaiting_approval", "queued", NULL);
            }
            if (rc == STORE_OK && s->ops->notify) {
                rc = s->ops->notify(s, STORE_CHANNEL_QUEUE, run_id);
            }
            rc = api_tx_end(s, rc);
            if (rc == STORE_OK) {
                api_after_commit(tx, api_kick, runs); /* told once the queue holds it */
            } else if (rc == STORE_CONFLICT) {
                rc = STORE_OK;
            }
        }
    }
    api_decisions_done(&decisions);
    api_row_copy_done(&run);
    return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

enum store_rc api_run_claim(struct writer_tx *tx, struct secretbox_keys *secret_keys,
                            struct runs *runs, int *ret_claimed, struct al_error *reterr)
{
    *ret_claimed = 0;
    /* one node (SQLite) claims only at its start: the runs its last stop left queued */
    return api_run_go(tx, secret_keys, runs, NULL, runs_node(runs) ? runs_node(runs) : "",
                      ret_claimed, reterr);
}

/* A supervised run whose start is denied ends "denied", with its run.end record. */
static enum store_rc api_run_deny_start(struct api_ctx *ctx, const struct api_approval_copy *a,
                                        const char *comment)
{
    struct store *s = ctx->store;
    char message[4200];
    struct buf o;
    struct buf d;
    buf_init(&o, 64 * 1024);
    buf_init(&d, 64 * 1024);
    snprintf(message, sizeof message, comment[0] ? "denied: %s" : "denied", comment);
    api_member(&o, "{\"error\":{\"code\":\"DENIED\",\"name\":\"\",\"message\":", message);
    buf_append_str(&o, ",\"stack\":\"\"},\"console\":[],\"stats\":{},\"host_calls\":[]}");
    enum store_rc rc =
            o.data ? s->ops->run_set_status(s, a->run, "awaiting_approval", "denied", o.data)
                   : STORE_ERROR;
    if (rc == STORE_OK) {
        api_member(&d, "{\"run\":", a->run);
        api_member(&d, ",\"status\":\"denied\",\"approval\":", a->id);
        api_member(&d, ",\"error\":{\"code\":\"DENIED\",\"message\":", message);
        buf_append_str(&d, "}}");
        rc = d.data ? s->ops->audit_append(s, "airlockd", "run.end", a->run, a->department, d.data,
                                           NULL)
                    : STORE_ERROR;
    }
    buf_done(&o);
    buf_done(&d);
    return rc;
}

/* A decision that finds its run waiting past its department's approval_ttl_ms ends the run
 * there (as the periodic look would have) and is refused: 0 when the run has not expired, or
 * -1 after answering 409 CONFLICT "approval ... expired: ..." (or the store's failure). */
static int api_approval_expire_now(struct api_ctx *ctx, const struct api_approval_copy *a)
{
    struct store *s = ctx->store;
    char why[512];
    int64_t ttl_ms = 0;
    int expired = 0;
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = api_run_expire(s, a->run, a->department, clock_wall_ms(), &expired);
        rc = api_tx_end(s, rc);
    }
    if (rc == STORE_OK && expired) {
        rc = api_approval_ttl(s, a->department, &ttl_ms);
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    if (!expired) {
        return 0;
    }
    api_expired_why(why, sizeof why, a->run, a->department, ttl_ms);
    api_error(ctx, 409, "CONFLICT", "approval %s %s", a->id, why);
    return -1;
}

/* What a person decides: approve, deny, or (in_doubt only) answer with the call's result. */
struct api_verdict {
    enum gov_approval_state to; /* approved, denied or answered */
    const char *comment;        /* "" when none */
    const char *result;         /* answered: the value (compact JSON); NULL otherwise */
};

static const char *api_verdict_action(enum gov_approval_state to)
{
    return to == GOV_APPROVAL_APPROVED ? "approval.approve"
           : to == GOV_APPROVAL_DENIED ? "approval.deny"
                                       : "approval.answer";
}

/* Records the decision gov allowed, its approval.approve, .deny or .answer (an answer's result
 * bounded as a host call's arguments are: whole up to 64 KiB, its SHA-256 beyond) and, for a
 * denied start, the run's end, in one transaction. 0, or -1 after answering. */
static int api_approval_store(struct api_ctx *ctx, const struct api_approval_copy *a,
                              const struct api_verdict *v)
{
    struct store *s = ctx->store;
    const char *to = gov_approval_state_name(v->to);
    struct buf d;
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    buf_init(&d, 64 * 1024 + 4096 + 1024);
    enum store_rc rc =
            v->result ? s->ops->approval_answer(s, a->id, ctx->who->name, v->comment, v->result)
                      : s->ops->approval_decide(s, a->id, to, ctx->who->name, v->comment);
    if (rc == STORE_OK) {
        api_member(&d, "{\"approval\":", a->id);
        api_member(&d, ",\"run\":", a->run);
        api_member(&d, ",\"kind\":", a->kind);
        api_member(&d, ",\"decision\":", to);
        api_member(&d, ",\"comment\":", v->comment);
        if (v->result) {
            buf_append_str(&d, ",");
            runs_put_bounded(&d, "result", v->result, strlen(v->result));
        }
        buf_append_str(&d, "}");
        rc = d.data ? api_audit(ctx, api_verdict_action(v->to), a->id, a->department, d.data)
                    : STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = webhooks_approval_decided(s, a->id, a->run, a->department, to, ctx->who->name);
    }
    if (rc == STORE_OK && v->to == GOV_APPROVAL_DENIED && strcmp(a->kind, "run") == 0) {
        rc = api_run_deny_start(ctx, a, v->comment);
    }
    rc = api_tx_end(s, rc);
    buf_done(&d);
    if (rc == STORE_OK) {
        return 0;
    }
    if (rc == STORE_CONFLICT || rc == STORE_NOT_FOUND) {
        api_error(ctx, 409, "CONFLICT", "approval %s was decided meanwhile", a->id);
    } else {
        api_store_failed(ctx);
    }
    return -1;
}

/* The decision stands: the run resumes (or starts) once nothing of it is pending. */
static void api_approval_resume(struct api_ctx *ctx, const struct api_approval_copy *a,
                                const struct api_verdict *v)
{
    if (v->to == GOV_APPROVAL_DENIED && strcmp(a->kind, "run") == 0) {
        return; /* a denied start has ended the run */
    }
    /* the log line names the kind of failure alone, so no detail is asked for */
    enum store_rc rc = api_run_resume(ctx->tx, ctx->secret_keys, ctx->svc->runs, a->run, NULL);
    if (rc != STORE_OK) {
        fprintf(stderr,
                "{\"log\":\"resume\",\"request_id\":\"%s\",\"run\":\"%s\",\"error\":\"%s\"}\n",
                ctx->req->request_id, a->run, rc == STORE_CONFLICT ? "refused" : "store");
    }
}

/* The function an in_doubt approval is of, and its connector; "" when not readable. */
struct api_doubt_fn {
    char function[RUNS_FN_NAME_MAX];
    char connector[STORE_NAME_MAX + 1];
};

static int api_doubt_fn(void *userdata, const struct store_approval *a)
{
    struct api_doubt_fn *f = userdata;
    snprintf(f->function, sizeof f->function, "%s", a->function ? a->function : "");
    snprintf(f->connector, sizeof f->connector, "%s", a->connector ? a->connector : "");
    return 0;
}

/* An answer's result is what the call's connector could have answered: a JSON value of at most
 * the host-call output limit that keeps the function's result_schema (and a boundary value:
 * api_approvals_answer_before). 0, or -1 after answering 400. */
static int api_answer_check(struct api_ctx *ctx, const char *id, const struct json_node *result,
                            size_t len)
{
    struct api_doubt_fn f;
    struct connector_target *t = NULL;
    struct al_error err;
    char why[512];
    memset(&f, 0, sizeof f);
    memset(&err, 0, sizeof err);
    if (len > API_ANSWER_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"result\" is over %zu bytes",
                  API_ANSWER_MAX);
        return -1;
    }
    if (ctx->store->ops->approval_get(ctx->store, id, api_doubt_fn, &f) != STORE_OK) {
        api_store_failed(ctx);
        return -1;
    }
    const char *dot = strchr(f.function, '.');
    int loaded =
            dot ? connector_target_load(ctx->store, ctx->secret_keys, f.connector, &t, &err) : 1;
    if (loaded < 0) {
        api_store_failed(ctx);
        return -1;
    }
    /* a connector gone since leaves nothing to check against: any value */
    int bad = loaded == 0 && connector_check_result(t, dot + 1, result, why, sizeof why) != 0;
    connector_target_free(t);
    if (bad) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"result\" breaks the result_schema of %s: %s", f.function, why);
        return -1;
    }
    return 0;
}

int api_approvals_answer_before(struct api_ctx *ctx)
{
    const struct json_node *comment_node = NULL;
    const struct json_node *result_node = NULL;
    const struct api_field fields[] = { { "comment", JSON_STRING, 0, &comment_node },
                                        { "result", API_FIELD_ANY, 1, &result_node } };
    struct buf result;
    char why[512];
    int ret = -1;
    buf_init(&result, API_ANSWER_MAX + 1);
    if (api_body(ctx, fields, 2) != 0) {
        goto out;
    }
    ret = 0;
    json_write_compact(&result, result_node->raw, result_node->raw_len);
    /* too large: the handler says so; no runner (a harness): nothing to check with */
    if (!result.data || !ctx->svc || !ctx->svc->runner) {
        goto out;
    }
    /* what the guest would be handed: a value the decoder refuses is no answer at all */
    int decoded = boundary_check(ctx->svc->runner, result.data, result.len, why, sizeof why);
    if (decoded > 0) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"result\" is not a boundary value (docs/values.md): %s", why);
        ret = -1;
    } else if (decoded < 0) {
        fprintf(stderr, "airlockd: the answer to approval %s could not be checked: %s\n",
                api_param(ctx, "id"), why);
        api_error(ctx, 500, "INTERNAL", "the answer could not be checked: %s", why);
        ret = -1;
    }
out:
    buf_done(&result);
    return ret;
}

/* approve, deny or answer (`answer`): parse, gov, one transaction, then the run resumes once
 * nothing of it is pending. */
static void api_approvals_decide(struct api_ctx *ctx, enum gov_approval_state to)
{
    struct store *s = ctx->store;
    const char *id = api_param(ctx, "id");
    const struct json_node *comment_node = NULL;
    const struct json_node *result_node = NULL;
    const struct api_field fields[] = { { "comment", JSON_STRING, 0, &comment_node },
                                        { "result", API_FIELD_ANY, 1, &result_node } };
    int answer = to == GOV_APPROVAL_ANSWERED;
    struct api_approval_copy a;
    struct gov_decision d;
    struct buf result;
    memset(&a, 0, sizeof a);
    buf_init(&result, API_ANSWER_MAX + 1);
    if (api_body(ctx, fields, answer ? 2 : 1) != 0) {
        goto out;
    }
    if (!ctx->svc || !ctx->svc->runs) {
        api_error(ctx, 500, "INTERNAL", API_NO_RUNS_MESSAGE);
        goto out;
    }
    const char *comment = comment_node ? comment_node->str : "";
    if (strlen(comment) > 4096) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"comment\" is over 4096 bytes");
        goto out;
    }
    enum store_rc rc = s->ops->approval_get(s, id, api_approval_copy_fn, &a);
    if (rc != STORE_OK) {
        if (rc == STORE_NOT_FOUND) {
            api_error(ctx, 404, "NOT_FOUND", "no approval %s", id);
        } else {
            api_store_failed(ctx);
        }
        goto out;
    }
    /* an approver of its department, not the run's starter (four eyes), of a pending one */
    gov_approval_may_decide(&ctx->who->gov, &a.g, &d);
    if (d.reason == GOV_WRONG_STATE && a.expired[0]) {
        /* ended by airlockd for waiting too long: said as such */
        api_error(ctx, 409, "CONFLICT", "approval %s %s", id, a.expired);
        goto out;
    }
    if (api_decision(ctx, &d) != 0 || api_approval_expire_now(ctx, &a) != 0) {
        goto out;
    }
    if (answer && strcmp(a.kind, "in_doubt") != 0) {
        /* only a call in doubt has a result a person can know; any other is approved or denied */
        api_error(ctx, 409, "CONFLICT",
                  "approval %s is of kind %s: only a call in doubt (in_doubt) is answered", id,
                  a.kind);
        goto out;
    }
    if (answer) {
        json_write_compact(&result, result_node->raw, result_node->raw_len);
        if (!result.data) {
            api_error(ctx, 400, "INVALID_REQUEST", "field \"result\" is over %zu bytes",
                      API_ANSWER_MAX);
            goto out;
        }
        if (api_answer_check(ctx, id, result_node, result.len) != 0) {
            goto out;
        }
    }
    struct api_verdict v = { to, comment, answer ? result.data : NULL };
    /* never resumes a run its principal could no longer start: that run ends instead */
    if (api_run_may_resume(ctx, a.run) != 0 || api_approval_store(ctx, &a, &v) != 0) {
        goto out;
    }
    api_approval_resume(ctx, &a, &v);
    api_reply(ctx, 200);
    struct api_inform in;
    memset(&in, 0, sizeof in);
    in.b = &ctx->resp->body;
    in.store = s;
    in.now_ms = clock_wall_ms();
    rc = s->ops->approval_get(s, id, api_approval_json, &in);
    api_inform_done(&in);
    if (rc != STORE_OK || in.failed) {
        api_store_failed(ctx);
        goto out;
    }
    buf_append_str(&ctx->resp->body, "\n");
out:
    buf_done(&result);
}

void api_approvals_approve(struct api_ctx *ctx)
{
    api_approvals_decide(ctx, GOV_APPROVAL_APPROVED);
}

void api_approvals_deny(struct api_ctx *ctx)
{
    api_approvals_decide(ctx, GOV_APPROVAL_DENIED);
}

void api_approvals_answer(struct api_ctx *ctx)
{
    api_approvals_decide(ctx, GOV_APPROVAL_ANSWERED);
}
