/*
 * fuzz_request.c - fuzz target for airlockd's request path without a socket: routing, the rate
 * limit, authentication, strict JSON bodies and the handlers' validation, through
 * router_handle (admission, then dispatch) over a real SQLite store, its writer and its
 * readers (src/server, src/store).
 *
 * An input is one request:
 *   byte 0     bits 0-1: the caller (0 no Authorization, 1 admin's key, 2 an agent's key in
 *              department "fz", 3 a well-formed unknown key); bits 2-7: how far the limiter's
 *              clock moves first, in 50 ms steps (so both 429 and refills are reached)
 *   then       METHOD "\n" PATH "\n" BODY (the path as libmicrohttpd hands it over: decoded,
 *              up to a NUL); a body over 4 KiB stands for one over the cap (body_too_large)
 * Claims: no crash, leak or sanitizer report; never a 5xx (but the 500 of a run that passed
 * every check and reaches the run engine, which this harness does not have); the answer is valid
 * JSON (or, for the web UI's pages and assets, exactly one of the embedded files), an error body
 * {"error":{"code","message","request_id"}} for every status from 400 on, a 429 carries a
 * Retry-After of 1 s or more and a 405 an Allow header. POST /v1/mcp answers JSON-RPC instead (a
 * result, or an error with a numeric code, whatever the status) and a notification's 202 has no
 * body. The store lives in a folder under /dev/shm
 * (when it exists) made once per process, so requests that create things accumulate state as a real
 * server would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "auth.h"
#include "http.h"
#include "json.h"
#include "ratelimit.h"
#include "readers.h"
#include "router.h"
#include "store.h"
#include "ui.h"
#include "writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_BODY_CAP 4096
#define FUZZ_STEP_NS  (UINT64_C(50) * 1000000)

static const char admin_key[] = "fuzz-admin-key-0123456789abcdef0123456789";
static const char agent_key[] = "fuzz-agent-key-0123456789abcdef0123456789";
static const char unknown_key[] =
        "ak_0123456789ab_"
        "0000000000000000000000000000000000000000000000000000000000000000";

static char dir[256];
static char db_path[320];
static struct store *store;
static struct readers *readers;
static struct writer *writer;
static struct ratelimit *limit;
static struct router router;
static struct api_services svc;
static struct secretbox_keys secrets; /* connector secrets: one key */
static uint64_t now_ns = UINT64_C(1) << 40;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_request: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static uint64_t fuzz_clock(void *userdata)
{
    (void)userdata;
    return now_ns;
}

static void cleanup(void)
{
    char path[400];
    static const char *const files[] = { "", "-wal", "-shm", "-journal" };
    ratelimit_free(limit);
    writer_free(writer);
    readers_free(readers);
    if (store) {
        store->ops->close(store);
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s%s", db_path, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void add_key(const char *principal, const char *key)
{
    char prefix[AUTH_PREFIX_LEN + 1];
    unsigned char hash[STORE_HASH_LEN];
    if (auth_key_digest(key, prefix, hash) != 0 ||
        store->ops->key_add(store, principal, prefix, hash) != STORE_OK) {
        fail("key_add", store->ops->errmsg(store));
    }
}

static void setup(void)
{
    char err[STORE_ERRMSG_MAX];
    struct al_error aerr;
    if (store) {
        return;
    }
    memset(&aerr, 0, sizeof aerr);
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/airlock-fuzz-request-XXXXXX", base);
    if (!mkdtemp(dir)) {
        fail("mkdtemp failed", NULL);
    }
    snprintf(db_path, sizeof db_path, "%s/airlock.db", dir);
    if (store_sqlite_open(db_path, &store, err) != STORE_OK) {
        fail("store_sqlite_open", err);
    }
    atexit(cleanup);
    if (store->ops->principal_create(store, "admin", "user") != STORE_OK ||
        store->ops->role_grant(store, "admin", "admin", "*") != STORE_OK ||
        store->ops->department_create(store, "fz") != STORE_OK ||
        store->ops->principal_create(store, "fz-agent", "agent") != STORE_OK ||
        store->ops->role_grant(store, "fz-agent", "agent", "fz") != STORE_OK) {
        fail("setup", store->ops->errmsg(store));
    }
    add_key("admin", admin_key);
    add_key("fz-agent", agent_key);
    struct ratelimit_options o = { 20, 40, 64, 1, fuzz_clock, NULL };
    if (ratelimit_new(&o, &limit) != 0) {
        fail("ratelimit_new", NULL);
    }
    /* one thread, as libFuzzer wants it: the writer's batches run inside the request */
    if (readers_new(store, 4, &readers, &aerr) != 0 || writer_new_inline(store, &writer) != 0) {
        fail("the store's readers or writer", aerr.message);
    }
    svc.writer = writer;
    svc.readers = readers;
    router.readers = readers;
    router.writer = writer;
    router.svc = &svc;
    router.limit = limit;
    static const unsigned char key[SECRETBOX_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    if (secretbox_keys_init(&secrets) != 0) {
        fail("secretbox_keys_init", NULL);
    }
    router.secret_keys = secretbox_keys_one(&secrets, key);
    router.body_limit_bytes = FUZZ_BODY_CAP;
}

/* The answer must be JSON, and from 400 on exactly an error body. */
static void check_answer(const struct http_response *resp)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    char status[16];
    snprintf(status, sizeof status, "%u", resp->status);
    /* this harness has no run engine: a run that passed every check stops at the hand-off */
    int no_engine = resp->status == 500 && resp->body.data &&
                    strstr(resp->body.data, "\"message\":\"" API_NO_RUNS_MESSAGE "\"");
    if (resp->status < 200 || (resp->status >= 500 && !no_engine)) {
        fail("status out of range or a 5xx", status);
    }
    /* the web UI's pages and assets (ui.c): a 200 with an embedded file and its CSP */
    if (resp->status == 200 && resp->content_type && strncmp(resp->content_type, "text/", 5) == 0 &&
        resp->headers && resp->etag) {
        for (size_t i = 0; i < ui_assets_len; i++) {
            if (ui_assets[i].len == resp->body.len &&
                memcmp(ui_assets[i].bytes, resp->body.data, resp->body.len) == 0) {
                return;
            }
        }
        fail("a UI answer that is no embedded file", NULL);
    }
    int mcp = strcmp(resp->route, "/v1/mcp") == 0;
    if (mcp && resp->status == 202 && resp->body.len == 0) {
        return;
    }
    if (!resp->body.data || json_parse(resp->body.data, resp->body.len, 64, &doc, &err) != AL_OK) {
        fail("the answer is not JSON", resp->body.data);
    }
    const struct json_node *root = json_root(doc);
    if (mcp && root->type == JSON_OBJECT && json_get(root, "jsonrpc")) {
        const struct json_node *result = json_get(root, "result");
        const struct json_node *e = json_get(root, "error");
        const struct json_node *code = e ? json_get(e, "code") : NULL;
        if (!json_get(root, "id") || !result == !e || (result && result->type != JSON_OBJECT) ||
            (e && (!code || code->type != JSON_NUMBER))) {
            fail("not a JSON-RPC answer", resp->body.data);
        }
        json_doc_free(doc);
        return;
    }
    if (resp->status >= 400) {
        const struct json_node *e = root->type == JSON_OBJECT ? json_get(root, "error") : NULL;
        const struct json_node *code = e ? json_get(e, "code") : NULL;
        const struct json_node *msg = e ? json_get(e, "message") : NULL;
        if (!code || code->type != JSON_STRING || !msg || msg->type != JSON_STRING ||
            !json_get(e, "request_id") || root->child->next) {
            fail("not an error body", resp->body.data);
        }
        if (resp->status == 429 && resp->retry_after_s < 1) {
            fail("429 without Retry-After", NULL);
        }
        if (resp->status == 405 && !resp->allow[0]) {
            fail("405 without Allow", NULL);
        }
    }
    json_doc_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const callers[] = { NULL, admin_key, agent_key, unknown_key };
    char method[32];
    char path[2048];
    char authorization[AUTH_KEY_MAX + 16];
    struct http_request req;
    struct http_response resp;

    if (size < 1) {
        return 0;
    }
    setup();
    now_ns += (uint64_t)(data[0] >> 2) * FUZZ_STEP_NS;
    const char *p = (const char *)data + 1;
    const char *end = (const char *)data + size;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || (size_t)(nl - p) >= sizeof method) {
        return 0;
    }
    memcpy(method, p, (size_t)(nl - p));
    method[nl - p] = '\0';
    p = nl + 1;
    nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || (size_t)(nl - p) >= sizeof path) {
        return 0;
    }
    memcpy(path, p, (size_t)(nl - p));
    path[nl - p] = '\0';
    p = nl + 1;

    size_t body_len = (size_t)(end - p);
    char *body = malloc(body_len + 1);
    if (!body) {
        return 0;
    }
    memcpy(body, p, body_len);
    body[body_len] = '\0';

    memset(&req, 0, sizeof req);
    req.method = method;
    req.path = path;
    if (callers[data[0] & 3]) {
        snprintf(authorization, sizeof authorization, "Bearer %s", callers[data[0] & 3]);
        req.authorization = authorization;
    }
    req.body = body;
    req.body_len = body_len;
    if (body_len > FUZZ_BODY_CAP) {
        req.body = "";
        req.body_len = 0;
        req.body_too_large = 1;
    }
    /* odd bodies declare their length (an oversized one is refused before it is read) */
    req.has_content_length = body_len % 2;
    req.content_length = body_len;
    snprintf(req.client, sizeof req.client, "ip4:127.0.0.1");
    snprintf(req.request_id, sizeof req.request_id, "req_0123456789abcdef");

    http_response_init(&resp);
    router_handle(&router, &req, &resp);
    if (resp.stream_fn) {
        /* a streamed body (the audit export) is read here as http.c would send it */
        char piece[4096];
        ssize_t n;
        while ((n = resp.stream_fn(resp.stream_data, piece, sizeof piece)) > 0) {
            buf_append(&resp.body, piece, (size_t)n);
        }
        if (n != HTTP_STREAM_END) {
            fail("a streamed body failed", NULL);
        }
        resp.stream_free(resp.stream_data);
        resp.stream_fn = NULL;
    }
    check_answer(&resp);
    http_response_done(&resp);
    if (req.app_free) {
        req.app_free(req.app);
    }
    free(body);
    return 0;
}
