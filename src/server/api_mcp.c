/*
 * api_mcp.c - POST /v1/mcp: the Model Context Protocol for agents, over Streamable HTTP
 * (revisions 2025-06-18 and 2025-03-26). Every POST carries one JSON-RPC message and is answered
 * with one JSON object (the transport lets a server answer a POST without an event stream);
 * nothing is kept between requests, so there is no session id and GET (the server's own stream)
 * and DELETE (ending a session) are 405 from the route table.
 *
 * The tools are what the agent may do through the rest of the API, and nothing else: one per
 * template with an approved version in a department where the caller is an agent, get_run, and
 * execute_code where one of its departments allows ad-hoc code. A call is handed to the handler
 * of the route it stands for (api_runs_create, api_runs_get) with a body made here, so a run
 * started over MCP is checked, recorded, audited and governed exactly as one started with
 * POST /v1/runs; what that handler answers (at once, or later from the run writer through the
 * deferred answer's reshape) is then turned into the tool's result. A run waiting for a person
 * answers as soon as it waits, like any run the client waits for: a call never outlasts its run.
 *
 * An Origin header naming another host than the request's is refused (a web page must not drive
 * a local airlockd through the browser: DNS rebinding).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "airlock.h"

#include "api.h"
#include "json.h"

#define MCP_ID_MAX     256 /* bytes of a request id's JSON text */
#define MCP_ANSWER_MAX ((size_t)64 << 20)
/* Nesting bound for reading a run's answer: a run's value may nest as deep as values cross the
 * sandbox's boundary (1000 levels, far past a request's API_DEPTH_MAX), and the run object holds
 * it a level down; the text is airlockd's own and the parser's recursion is bounded by this. */
#define MCP_RUN_DEPTH   1100
#define MCP_ERR_PARSE   (-32700)
#define MCP_ERR_REQUEST (-32600)
#define MCP_ERR_METHOD  (-32601)
#define MCP_ERR_PARAMS  (-32602)
#define MCP_ERR_SERVER  (-32603)

static const char *const mcp_versions[] = { "2025-06-18", "2025-03-26" }; /* the latest first */

/* The revision named `asked` when this server speaks it; NULL otherwise. */
static const char *mcp_version(const char *asked)
{
    for (size_t i = 0; asked && i < sizeof mcp_versions / sizeof mcp_versions[0]; i++) {
        if (strcmp(asked, mcp_versions[i]) == 0) {
            return mcp_versions[i];
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- JSON-RPC answers */

/* Starts the answer to request `id` (JSON text, or NULL for null). */
static void mcp_begin(struct buf *b, const char *id)
{
    buf_append_str(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_append_str(b, id ? id : "null");
}

static void mcp_error(struct api_ctx *ctx, unsigned status, const char *id, int code,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void mcp_error(struct api_ctx *ctx, unsigned status, const char *id, int code,
                      const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, status);
    mcp_begin(b, id);
    buf_printf(b, ",\"error\":{\"code\":%d,\"message\":", code);
    api_str(b, message);
    buf_append_str(b, "}}\n");
}

/* The tool result of a refusal given as text: isError, so the model sees it and may fix its
 * call (a protocol error would not reach it). */
static void mcp_tool_error(struct api_ctx *ctx, const char *id, const char *text)
{
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 200);
    mcp_begin(b, id);
    api_member(b, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":", text);
    buf_append_str(b, "}],\"isError\":true}}\n");
}

/* ---------------------------------------------------------------- a run's answer as a result */

/* Opens a tool result with its text content. */
static void mcp_put_text(struct buf *b, const struct buf *text)
{
    buf_append_str(b, "{\"content\":[{\"type\":\"text\",\"text\":");
    json_write_string(b, text->data ? text->data : "", text->len);
    buf_append_str(b, "}]");
}

/* Appends n's JSON text, or `none` when n is NULL. */
static void mcp_put_raw(struct buf *b, const struct json_node *n, const char *none)
{
    if (n) {
        buf_append(b, n->raw, n->raw_len);
    } else {
        buf_append_str(b, none);
    }
}

/* The result of an answer of the runs API: an error body ({"error":{code,message}}) is an
 * isError result naming the code; a run's object is its value (completed), its error (failed,
 * cancelled: isError) or, while it waits for a person or still runs, where it is and how to
 * poll it. `pending` (a JSON array, may be NULL) names the approvals still to decide; without it
 * every approval of the run is named (a run just started has no others). */
static void mcp_put_run_result(struct buf *out, unsigned status, const char *body, size_t len,
                               const char *pending)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    struct buf text;
    buf_init(&text, MCP_ANSWER_MAX);
    memset(&err, 0, sizeof err);
    if (json_parse(body, len, MCP_RUN_DEPTH, &doc, &err) != AL_OK ||
        json_root(doc)->type != JSON_OBJECT) {
        buf_printf(&text, "airlockd answered %u with a body that is not a JSON object", status);
        mcp_put_text(out, &text);
        buf_append_str(out, ",\"isError\":true}");
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *error = json_get(root, "error");
    const struct json_node *id = json_get(root, "id");
    const struct json_node *st = json_get(root, "status");
    const struct json_node *code = error ? json_get(error, "code") : NULL;
    const struct json_node *message = error ? json_get(error, "message") : NULL;
    const char *code_text = code && code->type == JSON_STRING ? code->str : "ERROR";
    const char *message_text =
            message && message->type == JSON_STRING ? message->str : "no message";
    error = error && error->type == JSON_OBJECT ? error : NULL;
    if (!id || id->type != JSON_STRING || !st || st->type != JSON_STRING) {
        /* an error body of the API: {"error":{"code","message","request_id"}} */
        buf_printf(&text, "%s: %s", code_text, message_text);
        mcp_put_text(out, &text);
        buf_append_str(out, ",\"structuredContent\":{\"error\":");
        mcp_put_raw(out, error, "null");
        buf_printf(out, ",\"http_status\":%u},\"isError\":true}", status);
        goto out;
    }
    const struct json_node *value = json_get(root, "value");
    const struct json_node *approvals = json_get(root, "approvals");
    const char *approvals_text = pending ? pending : approvals ? approvals->raw : "[]";
    size_t approvals_len = pending ? strlen(pending) : approvals ? approvals->raw_len : 2;
    enum gov_run_state state = api_run_state(st->str);
    int ended = gov_run_state_ended(state);
    int failed = ended && state != GOV_RUN_COMPLETED;
    if (ended && !failed) {
        if (value) {
            json_write_compact(&text, value->raw, value->raw_len);
        } else {
            buf_append_str(&text, "null");
        }
    } else if (failed) {
        buf_printf(&text, "run %s %s: %s: %s", id->str, st->str, code_text, message_text);
    } else if (state == GOV_RUN_AWAITING_APPROVAL) {
        struct json_doc *adoc = NULL;
        struct buf ids;
        buf_init(&ids, MCP_ANSWER_MAX);
        if (json_parse(approvals_text, approvals_len, 4, &adoc, &err) == AL_OK) {
            const struct json_node *a = json_root(adoc);
            for (const struct json_node *e = a->type == JSON_ARRAY ? a->child : NULL; e;
                 e = e->next) {
                if (e->type == JSON_STRING) {
                    buf_printf(&ids, "%s%s", ids.len ? ", " : "", e->str);
                }
            }
        }
        json_doc_free(adoc);
        if (ids.len) {
            buf_printf(&text, "run %s waits for a person to decide approval %s", id->str, ids.data);
        } else {
            /* decided, not yet resumed */
            buf_printf(&text, "run %s waits to resume: its approvals are decided", id->str);
        }
        buf_done(&ids);
        buf_printf(&text, ": call get_run with {\"run\":\"%s\"} to see its status and result.",
                   id->str);
    } else {
        buf_printf(&text, "run %s is %s: call get_run with {\"run\":\"%s\"} to see its result.",
                   id->str, st->str, id->str);
    }
    mcp_put_text(out, &text);
    buf_append_str(out, ",\"structuredContent\":{\"run\":");
    buf_append(out, id->raw, id->raw_len);
    buf_append_str(out, ",\"status\":");
    buf_append(out, st->raw, st->raw_len);
    if (ended && !failed) {
        buf_append_str(out, ",\"value\":");
        mcp_put_raw(out, value, "null");
    } else if (failed) {
        buf_append_str(out, ",\"error\":");
        mcp_put_raw(out, error, "null");
    } else {
        buf_append_str(out, ",\"approvals\":");
        buf_append(out, approvals_text, approvals_len);
    }
    buf_append_str(out, "}");
    buf_append_str(out, failed ? ",\"isError\":true}" : "}");
out:
    buf_done(&text);
    json_doc_free(doc);
}

/* Replaces the runs API's answer in resp with the JSON-RPC answer to request `id`. */
static void mcp_wrap(struct http_response *resp, const char *id, const char *pending)
{
    struct buf b;
    buf_init(&b, MCP_ANSWER_MAX);
    mcp_begin(&b, id);
    buf_append_str(&b, ",\"result\":");
    mcp_put_run_result(&b, resp->status, resp->body.data ? resp->body.data : "", resp->body.len,
                       pending);
    buf_append_str(&b, "}\n");
    buf_reset(&resp->body);
    if (!b.data || buf_append(&resp->body, b.data, b.len) != BUF_OK) {
        buf_reset(&resp->body);
        mcp_begin(&resp->body, id);
        buf_printf(&resp->body,
                   ",\"error\":{\"code\":%d,\"message\":\"the answer was too large\"}}\n",
                   MCP_ERR_SERVER);
    }
    resp->status = 200;
    resp->content_type = "application/json";
    buf_done(&b);
}

struct mcp_pending {
    char id[MCP_ID_MAX + 1];
};

static void mcp_reshape(void *userdata, struct http_response *resp)
{
    const struct mcp_pending *p = userdata;
    if (resp->status == 401) {
        return; /* the key was revoked while the run went on: 401, as the router refuses it */
    }
    mcp_wrap(resp, p->id, NULL);
}

/* Hands the tool call to api_runs_create with `body` as its request body: answered now
 * (refused, or no run engine) or later, when the run ends or waits for a person. */
static void mcp_start_run(struct api_ctx *ctx, const char *id, const struct buf *body)
{
    struct api_ctx sub = *ctx;
    struct mcp_pending *p = calloc(1, sizeof *p);
    if (!p || !body->data) {
        free(p);
        mcp_error(ctx, 500, id, MCP_ERR_SERVER, "out of memory");
        return;
    }
    snprintf(p->id, sizeof p->id, "%s", id);
    sub.doc = NULL;
    sub.body = body->data;
    sub.body_len = body->len;
    ctx->resp->reshape = mcp_reshape;
    ctx->resp->reshape_data = p;
    ctx->resp->reshape_free = free;
    api_runs_create(&sub);
    json_doc_free(sub.doc);
    if (ctx->resp->deferred) {
        return; /* http.c owns p now */
    }
    ctx->resp->reshape = NULL;
    ctx->resp->reshape_data = NULL;
    ctx->resp->reshape_free = NULL;
    mcp_wrap(ctx->resp, p->id, NULL);
    free(p);
}

/* ---------------------------------------------------------------- what the caller may use */

struct mcp_template {
    char name[STORE_NAME_MAX + 1];
    char department[STORE_NAME_MAX + 1];
    char *description;
};

struct mcp_templates {
    size_t n;
    size_t cap;
    struct mcp_template *items;
    int failed;
};

static int mcp_template_fn(void *userdata, const struct store_template *t)
{
    struct mcp_templates *l = userdata;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        void *items = realloc(l->items, cap * sizeof *l->items);
        if (!items) {
            l->failed = 1;
            return 1;
        }
        l->items = items;
        l->cap = cap;
    }
    struct mcp_template *m = &l->items[l->n];
    snprintf(m->name, sizeof m->name, "%s", t->name);
    snprintf(m->department, sizeof m->department, "%s", t->department);
    m->description = strdup(t->description ? t->description : "");
    if (!m->description) {
        l->failed = 1;
        return 1;
    }
    l->n++;
    return 0;
}

static void mcp_templates_done(struct mcp_templates *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].description);
    }
    free(l->items);
}

/* The caller is an agent of the department (or of every one). */
static int mcp_agent_of(const struct auth_principal *who, const char *department)
{
    return gov_holds(&who->gov, GOV_ROLE_AGENT, department);
}

struct mcp_adhoc {
    const struct auth_principal *who;
    char department[STORE_NAME_MAX + 1]; /* the first that allows ad-hoc code, or "" */
};

static int mcp_adhoc_fn(void *userdata, const struct store_department *d)
{
    struct mcp_adhoc *a = userdata;
    if (d->allow_adhoc && !a->department[0] && mcp_agent_of(a->who, d->name)) {
        snprintf(a->department, sizeof a->department, "%s", d->name);
    }
    return a->department[0] != '\0';
}

/* The first department (by name) where the caller is an agent and ad-hoc code is allowed;
 * "" for none. The store's failure, or STORE_OK. */
static enum store_rc mcp_adhoc_department(struct api_ctx *ctx, char *ret)
{
    struct mcp_adhoc a = { ctx->who, "" };
    enum store_rc rc = ctx->store->ops->department_list(ctx->store, mcp_adhoc_fn, &a);
    snprintf(ret, STORE_NAME_MAX + 1, "%s", a.department);
    return rc;
}

/* A version's input schema, copied into *(char **)userdata. */
static int mcp_schema_fn(void *userdata, const struct store_version *v)
{
    *(char **)userdata = strdup(v->input_schema ? v->input_schema : "true");
    return 0;
}

/* A tool's inputSchema from a version's input schema: MCP wants an object schema, so one
 * without a type gets "type":"object", and any other (true, a schema of another type) is
 * {"type":"object"} - the run's own check still applies the version's schema whole. */
static void mcp_put_schema(struct buf *b, const char *schema)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    struct buf compact;
    buf_init(&compact, MCP_ANSWER_MAX);
    if (json_parse(schema, strlen(schema), API_DEPTH_MAX + 16, &doc, &err) == AL_OK &&
        json_root(doc)->type == JSON_OBJECT &&
        json_write_compact(&compact, schema, strlen(schema)) == BUF_OK && compact.data) {
        const struct json_node *root = json_root(doc);
        const struct json_node *type = json_get(root, "type");
        if (type && type->type == JSON_STRING && strcmp(type->str, "object") == 0) {
            buf_append(b, compact.data, compact.len);
        } else if (!type && root->count > 0) {
            buf_append_str(b, "{\"type\":\"object\",");
            buf_append(b, compact.data + 1, compact.len - 1);
        } else {
            buf_append_str(b, "{\"type\":\"object\"}");
        }
    } else {
        buf_append_str(b, "{\"type\":\"object\"}");
    }
    buf_done(&compact);
    json_doc_free(doc);
}

static int mcp_builtin(const char *name)
{
    return strcmp(name, "get_run") == 0 || strcmp(name, "execute_code") == 0;
}

/* ---------------------------------------------------------------- methods */

static void mcp_initialize(struct api_ctx *ctx, const char *id, const struct json_node *params)
{
    const struct json_node *asked = params ? json_get(params, "protocolVersion") : NULL;
    const char *version = mcp_version(asked && asked->type == JSON_STRING ? asked->str : NULL);
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 200);
    mcp_begin(b, id);
    buf_printf(b,
               ",\"result\":{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{"
               "\"listChanged\":false}},\"serverInfo\":{\"name\":\"airlockd\",\"version\":",
               version ? version : mcp_versions[0]);
    api_str(b, al_version());
    buf_append_str(b, "},\"instructions\":");
    api_str(b, "Each tool but get_run and execute_code runs an approved airlock template of the "
               "same name with its arguments as the input. A run that waits for a person to "
               "approve a step answers at once with its run id: call get_run to see it go on.");
    buf_append_str(b, "}}\n");
}

static void mcp_tools_list(struct api_ctx *ctx, const char *id)
{
    struct store *s = ctx->store;
    struct mcp_templates l;
    struct buf *b = &ctx->resp->body;
    char adhoc[STORE_NAME_MAX + 1] = "";
    memset(&l, 0, sizeof l);
    enum store_rc rc = s->ops->template_list(s, mcp_template_fn, &l);
    if (rc == STORE_OK && !l.failed) {
        rc = mcp_adhoc_department(ctx, adhoc);
    }
    if (rc != STORE_OK || l.failed) {
        api_store_failed(ctx);
        mcp_error(ctx, 500, id, MCP_ERR_SERVER, "the store failed");
        goto out;
    }
    api_reply(ctx, 200);
    mcp_begin(b, id);
    buf_append_str(b, ",\"result\":{\"tools\":[");
    for (size_t i = 0; i < l.n; i++) {
        const struct mcp_template *t = &l.items[i];
        char *schema = NULL;
        if (mcp_builtin(t->name) || !mcp_agent_of(ctx->who, t->department)) {
            continue;
        }
        rc = s->ops->version_get(s, t->name, 0, mcp_schema_fn, &schema);
        if (rc == STORE_NOT_FOUND) {
            continue; /* no approved version: a draft, or revoked */
        }
        if (rc != STORE_OK || !schema) {
            free(schema);
            api_store_failed(ctx);
            mcp_error(ctx, 500, id, MCP_ERR_SERVER, "the store failed");
            goto out;
        }
        api_member(b, "{\"name\":", t->name);
        api_member(b, ",\"title\":", t->name);
        api_member(b, ",\"description\":", t->description);
        buf_append_str(b, ",\"inputSchema\":");
        mcp_put_schema(b, schema);
        buf_append_str(b, "},");
        free(schema);
    }
    buf_append_str(b, "{\"name\":\"get_run\",\"title\":\"get_run\",\"description\":\"The status of "
                      "a run started by a tool call: its value once completed, its error once "
                      "failed, the approvals it waits for.\",\"inputSchema\":{\"type\":\"object\","
                      "\"properties\":{\"run\":{\"type\":\"string\",\"description\":\"the run id "
                      "(run_...)\"}},\"required\":[\"run\"],\"additionalProperties\":false}}");
    if (adhoc[0]) {
        buf_append_str(
                b, ",{\"name\":\"execute_code\",\"title\":\"execute_code\",\"description\":\"Runs "
                   "JavaScript (or TypeScript) in the airlock sandbox as an ad-hoc run: the source "
                   "is a function body (top-level await and return work) that may call only the "
                   "host functions named, each as connector.function. Audited whole.\","
                   "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"source\":{\"type\":"
                   "\"string\"},\"functions\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
                   "\"language\":{\"type\":\"string\",\"enum\":[\"js\",\"ts\"]},\"department\":{"
                   "\"type\":\"string\"}},\"required\":[\"source\",\"functions\"],"
                   "\"additionalProperties\":false}}");
    }
    buf_append_str(b, "]}}\n");
out:
    mcp_templates_done(&l);
}

struct mcp_ids {
    struct buf *b;
    int n;
};

static int mcp_ids_fn(void *userdata, const struct store_approval *a)
{
    struct mcp_ids *l = userdata;
    buf_append_str(l->b, l->n++ ? "," : "");
    api_str(l->b, a->id);
    return 0;
}

/* get_run: the run as GET /v1/runs/{id} answers it, with the approvals still pending. */
static void mcp_get_run(struct api_ctx *ctx, const char *id, const struct json_node *args)
{
    const struct json_node *run = args ? json_get(args, "run") : NULL;
    if (!run || run->type != JSON_STRING || args->count != 1) {
        mcp_tool_error(ctx, id,
                       "INVALID_REQUEST: get_run takes {\"run\": \"run_...\"}: field run "
                       "must be a string, and no other field");
        return;
    }
    struct api_ctx sub = *ctx;
    struct buf pending;
    sub.doc = NULL;
    sub.body = "";
    sub.body_len = 0;
    sub.nparams = 1;
    sub.params[0].name = "id";
    sub.params[0].name_len = 2;
    /* too long for an id: no run has it, and the handler answers 404 for "" */
    snprintf(sub.params[0].value, sizeof sub.params[0].value, "%s",
             strlen(run->str) > STORE_NAME_MAX ? "" : run->str);
    api_runs_get(&sub); /* gov_run_may_see decides, as for GET /v1/runs/{id} */
    json_doc_free(sub.doc);
    if (ctx->resp->deferred) {
        return; /* refused for want of a role: answered once the refusal is recorded */
    }
    buf_init(&pending, (size_t)1 << 20);
    buf_append_str(&pending, "[");
    struct mcp_ids ids = { &pending, 0 };
    if (ctx->resp->status == 200 &&
        ctx->store->ops->approval_list(ctx->store, sub.params[0].value, "pending", mcp_ids_fn,
                                       &ids) != STORE_OK) {
        api_store_failed(ctx);
    }
    buf_append_str(&pending, "]");
    mcp_wrap(ctx->resp, id, pending.data);
    buf_done(&pending);
}

static void mcp_execute_code(struct api_ctx *ctx, const char *id, const struct json_node *args)
{
    char dept[STORE_NAME_MAX + 1] = "";
    struct buf body;
    if (mcp_adhoc_department(ctx, dept) != STORE_OK) {
        api_store_failed(ctx);
        mcp_error(ctx, 500, id, MCP_ERR_SERVER, "the store failed");
        return;
    }
    if (!dept[0]) {
        mcp_error(ctx, 200, id, MCP_ERR_PARAMS,
                  "unknown tool execute_code: no department of yours allows ad-hoc code");
        return;
    }
    const struct json_node *source = args ? json_get(args, "source") : NULL;
    const struct json_node *functions = args ? json_get(args, "functions") : NULL;
    const struct json_node *language = args ? json_get(args, "language") : NULL;
    const struct json_node *department = args ? json_get(args, "department") : NULL;
    const char *bad = !source || source->type != JSON_STRING          ? "source"
                      : !functions || functions->type != JSON_ARRAY   ? "functions"
                      : language && language->type != JSON_STRING     ? "language"
                      : department && department->type != JSON_STRING ? "department"
                                                                      : NULL;
    size_t known = 2 + (language != NULL) + (department != NULL);
    if (bad) {
        char text[160];
        snprintf(text, sizeof text,
                 "INVALID_REQUEST: execute_code: field %s is missing or of the wrong type", bad);
        mcp_tool_error(ctx, id, text);
        return;
    }
    if (args->count != known) {
        mcp_tool_error(ctx, id,
                       "INVALID_REQUEST: execute_code takes only source, functions, language "
                       "and department");
        return;
    }
    /* the arguments are members of the body, checked above: the first department of the
     * caller's that allows ad-hoc code unless they name one */
    buf_init(&body, MCP_ANSWER_MAX);
    buf_append(&body, args->raw, args->raw_len - 1);
    if (!department) {
        api_member(&body, ",\"department\":", dept);
    }
    buf_append_str(&body, ",\"wait\":true}");
    mcp_start_run(ctx, id, &body);
    buf_done(&body);
}

/* A template the caller may run (an agent of its department, an approved version): 1, 0 when
 * it is no tool of the caller's, -1 on a store failure. */
static int mcp_runnable(struct api_ctx *ctx, const char *name)
{
    char *schema = NULL;
    struct mcp_templates l;
    memset(&l, 0, sizeof l);
    enum store_rc rc = ctx->store->ops->template_get(ctx->store, name, mcp_template_fn, &l);
    if (rc == STORE_OK && l.failed) {
        rc = STORE_ERROR;
    } else if (rc == STORE_OK && (l.n == 0 || !mcp_agent_of(ctx->who, l.items[0].department))) {
        rc = STORE_NOT_FOUND;
    } else if (rc == STORE_OK) {
        rc = ctx->store->ops->version_get(ctx->store, name, 0, mcp_schema_fn, &schema);
    }
    int ret = rc == STORE_OK ? 1 : rc == STORE_NOT_FOUND ? 0 : -1;
    free(schema);
    mcp_templates_done(&l);
    return ret;
}

static void mcp_tools_call(struct api_ctx *ctx, const char *id, const struct json_node *params)
{
    const struct json_node *name = params ? json_get(params, "name") : NULL;
    const struct json_node *args = params ? json_get(params, "arguments") : NULL;
    if (!name || name->type != JSON_STRING || strlen(name->str) != name->str_len) {
        mcp_error(ctx, 200, id, MCP_ERR_PARAMS, "tools/call needs params.name, a string");
        return;
    }
    if (args && args->type != JSON_OBJECT) {
        mcp_error(ctx, 200, id, MCP_ERR_PARAMS, "params.arguments must be an object");
        return;
    }
    if (strcmp(name->str, "get_run") == 0) {
        mcp_get_run(ctx, id, args);
        return;
    }
    if (strcmp(name->str, "execute_code") == 0) {
        mcp_execute_code(ctx, id, args);
        return;
    }
    int ok = api_name_ok(name->str) ? mcp_runnable(ctx, name->str) : 0;
    if (ok < 0) {
        api_store_failed(ctx);
        mcp_error(ctx, 500, id, MCP_ERR_SERVER, "the store failed");
        return;
    }
    if (ok == 0) {
        mcp_error(ctx, 200, id, MCP_ERR_PARAMS, "unknown tool %.64s", name->str);
        return;
    }
    struct buf body;
    buf_init(&body, MCP_ANSWER_MAX);
    api_member(&body, "{\"template\":", name->str);
    buf_append_str(&body, ",\"input\":");
    mcp_put_raw(&body, args, "{}");
    buf_append_str(&body, ",\"wait\":true}");
    mcp_start_run(ctx, id, &body);
    buf_done(&body);
}

/* ---------------------------------------------------------------- the route */

/* No Origin (not a browser), or one naming the host the request was sent to. */
static int mcp_origin_ok(const struct http_request *req)
{
    const char *origin = http_header(req, "Origin");
    const char *host = http_header(req, "Host");
    if (!origin) {
        return 1;
    }
    const char *rest = strstr(origin, "://");
    return rest && host && strcasecmp(rest + 3, host) == 0;
}

/* The transport's headers: an Origin of this host (or none), a protocol version this server
 * speaks (or none). 0, or -1 after answering. */
static int mcp_headers_ok(struct api_ctx *ctx)
{
    if (!mcp_origin_ok(ctx->req)) {
        mcp_error(ctx, 403, NULL, MCP_ERR_REQUEST,
                  "the Origin header names another host than this server");
        return -1;
    }
    const char *version = http_header(ctx->req, "MCP-Protocol-Version");
    if (version && !mcp_version(version)) {
        mcp_error(ctx, 400, NULL, MCP_ERR_REQUEST,
                  "unsupported MCP-Protocol-Version %.32s: this server speaks %s and %s", version,
                  mcp_versions[0], mcp_versions[1]);
        return -1;
    }
    return 0;
}

/* Answers request `id`: its method with its params. */
static void mcp_dispatch(struct api_ctx *ctx, const char *id, const char *method,
                         const struct json_node *params)
{
    if (strcmp(method, "initialize") == 0) {
        mcp_initialize(ctx, id, params);
    } else if (strcmp(method, "ping") == 0) {
        api_reply(ctx, 200);
        mcp_begin(&ctx->resp->body, id);
        buf_append_str(&ctx->resp->body, ",\"result\":{}}\n");
    } else if (strcmp(method, "tools/list") == 0) {
        mcp_tools_list(ctx, id);
    } else if (strcmp(method, "tools/call") == 0) {
        mcp_tools_call(ctx, id, params);
    } else {
        mcp_error(ctx, 200, id, MCP_ERR_METHOD, "method not found: %.64s", method);
    }
}

void api_mcp_post(struct api_ctx *ctx)
{
    struct al_error err;
    char id[MCP_ID_MAX + 1];
    const char *req_body = ctx->req->body;
    size_t req_len = ctx->req->body_len;
    if (mcp_headers_ok(ctx) != 0) {
        return;
    }
    memset(&err, 0, sizeof err);
    if (json_parse(req_body, req_len, API_DEPTH_MAX, &ctx->doc, &err) != AL_OK) {
        mcp_error(ctx, 400, NULL, MCP_ERR_PARSE, "parse error: %s", err.message);
        return;
    }
    const struct json_node *msg = json_root(ctx->doc);
    if (msg->type == JSON_ARRAY) {
        mcp_error(ctx, 400, NULL, MCP_ERR_REQUEST, "batches are not supported: one message a POST");
        return;
    }
    if (msg->type != JSON_OBJECT) {
        mcp_error(ctx, 400, NULL, MCP_ERR_REQUEST, "a JSON-RPC message is an object");
        return;
    }
    char where[128];
    const char *why = "";
    int bad = json_ijson_check(msg, where, sizeof where, &why);
    if (bad != 0) { /* as api_body: the audit log's canonical JSON could not hold it */
        mcp_error(ctx, bad < 0 ? 500 : 400, NULL, MCP_ERR_PARSE, "not I-JSON at %s: %s",
                  bad < 0 ? "$" : where, bad < 0 ? "out of memory" : why);
        return;
    }
    const struct json_node *jsonrpc = json_get(msg, "jsonrpc");
    const struct json_node *idn = json_get(msg, "id");
    const struct json_node *method = json_get(msg, "method");
    const struct json_node *params = json_get(msg, "params");
    int id_ok = idn && (idn->type == JSON_STRING || idn->type == JSON_NUMBER) &&
                idn->raw_len <= MCP_ID_MAX;
    if (id_ok) {
        memcpy(id, idn->raw, idn->raw_len);
        id[idn->raw_len] = '\0';
    }
    if (!jsonrpc || jsonrpc->type != JSON_STRING || strcmp(jsonrpc->str, "2.0") != 0) {
        mcp_error(ctx, 400, id_ok ? id : NULL, MCP_ERR_REQUEST, "jsonrpc must be \"2.0\"");
        return;
    }
    if (!method && (json_get(msg, "result") || json_get(msg, "error"))) {
        /* a response to a request of ours: this server sends none, so nothing to do */
        api_reply(ctx, 202);
        return;
    }
    if (!method || method->type != JSON_STRING || (idn && !id_ok) ||
        (params && params->type != JSON_OBJECT)) {
        mcp_error(ctx, 400, id_ok ? id : NULL, MCP_ERR_REQUEST,
                  "a request has a string method, an id (a string or a number of at most %d "
                  "bytes) and object params",
                  MCP_ID_MAX);
        return;
    }
    if (!idn) {
        /* a notification (notifications/initialized, cancelled): accepted, no answer */
        api_reply(ctx, 202);
        return;
    }
    mcp_dispatch(ctx, id, method->str, params);
}
