/*
 * connector.c - loading a connector's call target (the store's row, its sealed secret and
 * headers opened) and the client that performs calls: one thread runs a curl_multi loop; other
 * threads hand it calls through a locked queue and curl_multi_wakeup. Each loop turn waits at
 * most CONNECTOR_CANCEL_POLL_MS, so cancellation is noticed within that bound even when no
 * transfer moves. curl opens, keeps alive and closes the connections itself. A connector that
 * writes an answer in two writes with Nagle's algorithm on makes a call wait for a delayed ACK
 * (40 ms on Linux): connectors turn Nagle off or write once (docs/server.md).
 *
 * Hardening, each against a connector (or whoever answers at its address) attacking airlockd:
 * only http/https, for the first request and any redirect (which is never followed anyway); no
 * proxy from the environment (a proxy would see the secret headers); no cookie engine; no
 * content decoding (no decompression bomb); the answer capped while it arrives; every byte of
 * an answer parsed under a depth bound; a connector's error text cut and made valid UTF-8 before
 * it reaches a guest. Its raw body never goes into a message.
 */
#include "connector.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "error.h"
#include "hex.h"
#include "json.h"
#include "schema.h"
#include "secretbox.h"
#include "utf8.h"

#define CONNECTOR_BODY_MAX   ((size_t)8 << 20) /* bytes of a request body */
#define CONNECTOR_JSON_DEPTH 512u
#define CONNECTOR_ROW_MAX    ((size_t)4 << 20)

struct connector_fn {
    char *name;
    int sensitive;
    int idempotent;
    struct schema *args;   /* NULL: any arguments */
    struct schema *result; /* NULL: any result */
};

struct connector_target {
    char name[STORE_NAME_MAX + 1];
    char *url;
    char *secret; /* cleansed on free */
    size_t secret_len;
    char **headers; /* "Name: value" lines, cleansed on free */
    size_t nheaders;
    int64_t timeout_ms;
    struct connector_fn *fns;
    size_t nfns;
};

/* ---- target -------------------------------------------------------------------------------- */

static void connector_cleanse_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
    }
    free(s);
}

void connector_target_free(struct connector_target *t)
{
    if (!t) {
        return;
    }
    free(t->url);
    if (t->secret) {
        OPENSSL_cleanse(t->secret, t->secret_len);
    }
    free(t->secret);
    for (size_t i = 0; i < t->nheaders; i++) {
        connector_cleanse_free(t->headers[i]);
    }
    free(t->headers);
    for (size_t i = 0; i < t->nfns; i++) {
        free(t->fns[i].name);
        schema_free(t->fns[i].args);
        schema_free(t->fns[i].result);
    }
    free(t->fns);
    free(t);
}

struct connector_row {
    int seen;
    char *url;
    char *secret_sealed;
    char *headers_sealed;
    char *functions;
    int64_t timeout_ms;
};

static int connector_row_copy(void *userdata, const struct store_connector *c)
{
    struct connector_row *r = userdata;
    r->seen = 1;
    r->url = buf_dup(c->url, strlen(c->url));
    r->secret_sealed = buf_dup(c->signing_secret_sealed, strlen(c->signing_secret_sealed));
    r->headers_sealed = buf_dup(c->headers_sealed, strlen(c->headers_sealed));
    r->functions = buf_dup(c->functions, strlen(c->functions));
    r->timeout_ms = c->timeout_ms;
    return 0;
}

static int connector_load_headers(struct connector_target *t, const char *plain, size_t len,
                                  struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    int rc = -1;
    if (json_parse(plain, len, 4, &doc, NULL) != AL_OK || json_root(doc)->type != JSON_OBJECT) {
        error_set(reterr, AL_CONFIG_ERROR, "connector %s: the stored headers are not a JSON object",
                  t->name);
        goto out;
    }
    const struct json_node *root = json_root(doc);
    t->headers = calloc(root->count + 1, sizeof *t->headers);
    if (!t->headers) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    for (const struct json_node *h = root->child; h; h = h->next) {
        if (h->type != JSON_STRING) {
            error_set(reterr, AL_CONFIG_ERROR, "connector %s: a stored header is not a string",
                      t->name);
            goto out;
        }
        size_t n = h->key_len + 2 + h->str_len + 1;
        char *line = malloc(n);
        if (!line) {
            error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto out;
        }
        snprintf(line, n, "%s: %s", h->key, h->str);
        t->headers[t->nheaders++] = line;
    }
    rc = 0;
out:
    json_doc_free(doc);
    return rc;
}

static int connector_load_functions(struct connector_target *t, const char *text,
                                    struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct al_error e;
    int rc = -1;
    memset(&e, 0, sizeof e);
    if (json_parse(text, strlen(text), SCHEMA_JSON_DEPTH, &doc, &e) != AL_OK ||
        json_root(doc)->type != JSON_OBJECT) {
        error_set(reterr, AL_CONFIG_ERROR,
                  "connector %s: the stored functions are not a JSON object", t->name);
        goto out;
    }
    const struct json_node *root = json_root(doc);
    t->fns = calloc(root->count + 1, sizeof *t->fns);
    if (!t->fns) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    for (const struct json_node *f = root->child; f; f = f->next) {
        struct connector_fn *fn = &t->fns[t->nfns++];
        const struct json_node *sensitive = json_get(f, "sensitive");
        const struct json_node *idempotent = json_get(f, "idempotent");
        const struct json_node *args = json_get(f, "args_schema");
        const struct json_node *result = json_get(f, "result_schema");
        fn->name = buf_dup(f->key, f->key_len);
        fn->sensitive = sensitive && sensitive->type == JSON_TRUE;
        fn->idempotent = idempotent && idempotent->type == JSON_TRUE;
        if (!fn->name ||
            (args && schema_compile(args->raw, args->raw_len, &fn->args, &e) != AL_OK) ||
            (result && schema_compile(result->raw, result->raw_len, &fn->result, &e) != AL_OK)) {
            /* a schema's own code (AL_CONFIG_ERROR, or AL_INTERNAL_ERROR out of memory) */
            error_set(reterr, fn->name ? e.code : AL_INTERNAL_ERROR,
                      "connector %.64s: function %.40s does not load: %.100s", t->name, f->key,
                      e.message);
            goto out;
        }
    }
    rc = 0;
out:
    json_doc_free(doc);
    return rc;
}

int connector_target_load(struct store *s, struct secretbox_keys *secret_keys, const char *name,
                          struct connector_target **ret, struct al_error *reterr)
{
    struct connector_row row;
    struct connector_target *t = NULL;
    char context[STORE_NAME_MAX + 64];
    char *headers = NULL;
    size_t headers_len = 0;
    int rc = -1;
    memset(&row, 0, sizeof row);
    if (strlen(name) > STORE_NAME_MAX) {
        return 1;
    }
    enum store_rc src = s->ops->connector_get(s, name, connector_row_copy, &row);
    if (src == STORE_NOT_FOUND) {
        rc = 1;
        goto out;
    }
    if (src != STORE_OK) {
        error_set(reterr, AL_INTERNAL_ERROR, "%.250s", s->ops->errmsg(s));
        goto out;
    }
    t = calloc(1, sizeof *t);
    if (!t || !row.url || !row.secret_sealed || !row.headers_sealed || !row.functions) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->timeout_ms = row.timeout_ms;
    t->url = row.url;
    row.url = NULL;
    snprintf(context, sizeof context, "connector/%s/signing_secret", name);
    if (secretbox_keys_open(secret_keys, context, row.secret_sealed, &t->secret, &t->secret_len) !=
        0) {
        error_set(reterr, AL_CONFIG_ERROR,
                  "connector %s: the signing secret does not open (another key?)", name);
        goto out;
    }
    snprintf(context, sizeof context, "connector/%s/headers", name);
    if (secretbox_keys_open(secret_keys, context, row.headers_sealed, &headers, &headers_len) !=
        0) {
        error_set(reterr, AL_CONFIG_ERROR, "connector %s: the headers do not open (another key?)",
                  name);
        goto out;
    }
    if (connector_load_headers(t, headers, headers_len, reterr) != 0 ||
        connector_load_functions(t, row.functions, reterr) != 0) {
        goto out;
    }
    *ret = t;
    t = NULL;
    rc = 0;
out:
    if (headers) {
        OPENSSL_cleanse(headers, headers_len);
    }
    free(headers);
    free(row.url);
    free(row.secret_sealed);
    free(row.headers_sealed);
    free(row.functions);
    connector_target_free(t);
    return rc;
}

static const struct connector_fn *connector_find(const struct connector_target *t, const char *fn)
{
    for (size_t i = 0; i < t->nfns; i++) {
        if (strcmp(t->fns[i].name, fn) == 0) {
            return &t->fns[i];
        }
    }
    return NULL;
}

int connector_function_flags(const struct connector_target *t, const char *fn, int *ret_sensitive,
                             int *ret_idempotent)
{
    const struct connector_fn *f = t && fn ? connector_find(t, fn) : NULL;
    if (!f) {
        return -1;
    }
    *ret_sensitive = f->sensitive;
    *ret_idempotent = f->idempotent;
    return 0;
}

/* "crm.lookup: argument 2 (arg2): must be integer" from the validator's "/1: must be integer"
 * (or "/1/amount: ..." and "(root): ..." for the argument list itself): the guest's TypeError
 * names the argument as the function's declaration for the model does (src/gov/tsdecl.c). */
static void connector_args_message(const struct connector_target *t, const struct connector_fn *f,
                                   const char *why, char *out, size_t cap)
{
    char *end = NULL;
    long n = why[0] == '/' ? strtol(why + 1, &end, 10) : -1;
    if (n >= 0 && end && end != why + 1 && (*end == ':' || *end == '/')) {
        snprintf(out, cap, "%s.%s: argument %ld (arg%ld)%s%s", t->name, f->name, n + 1, n + 1,
                 *end == '/' ? " at " : "", end);
    } else {
        const char *rule = strncmp(why, "(root): ", 8) == 0 ? why + 8 : why;
        snprintf(out, cap, "%s.%s: the arguments: %s", t->name, f->name, rule);
    }
}

/* 0 when the function has no args_schema or the arguments (a parsed array) keep it. */
static int connector_args_keep(const struct connector_target *t, const struct connector_fn *f,
                               const struct json_node *args, char *message, size_t cap)
{
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (!f->args || schema_validate_node(f->args, args, &err) == AL_OK) {
        return 0;
    }
    connector_args_message(t, f, err.message, message, cap);
    return -1;
}

int connector_check_args(const struct connector_target *t, const char *fn, const char *args_json,
                         char *message, size_t cap)
{
    const struct connector_fn *f = t && fn ? connector_find(t, fn) : NULL;
    struct json_doc *doc = NULL;
    struct al_error err;
    int rc = 0;
    memset(&err, 0, sizeof err);
    if (!f || !f->args) {
        return 0;
    }
    if (json_parse(args_json, strlen(args_json), CONNECTOR_JSON_DEPTH, &doc, &err) != AL_OK) {
        return 0; /* not this check's to refuse: the call itself will say */
    }
    rc = connector_args_keep(t, f, json_root(doc), message, cap);
    json_doc_free(doc);
    return rc;
}

int connector_check_result(const struct connector_target *t, const char *fn,
                           const struct json_node *result, char *message, size_t cap)
{
    const struct connector_fn *f = t && fn ? connector_find(t, fn) : NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (!f || !f->result || schema_validate_node(f->result, result, &err) == AL_OK) {
        return 0;
    }
    snprintf(message, cap, "%s", err.message);
    return -1;
}

/* ---- client -------------------------------------------------------------------------------- */

struct connector_call {
    struct connector_call *next;
    const struct connector_target *target;
    const struct connector_fn *fn;
    connector_done_fn *done;
    connector_post_fn *post_done; /* a post (connector_client_post) instead of a call */
    void *userdata;
    int (*cancelled)(void *userdata);
    CURL *easy;
    struct curl_slist *headers;
    struct buf body;
    struct buf answer;
    int too_big;
    char args_refused[CONNECTOR_MESSAGE_MAX]; /* set before it starts: completes at once */
    char curl_err[CURL_ERROR_SIZE];
};

struct connector_client {
    pthread_t thread;
    CURLM *multi;
    pthread_mutex_t lock;
    struct connector_call *queue;  /* handed over, not yet added to multi (under lock) */
    struct connector_call **tail;  /* where the next one goes: calls start in order */
    int stopping;                  /* under lock */
    struct connector_call *active; /* the thread's own */
};

static pthread_once_t connector_curl_once = PTHREAD_ONCE_INIT;
static int connector_curl_ok;

static void connector_curl_init(void)
{
    connector_curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static void connector_call_free(struct connector_call *call)
{
    if (!call) {
        return;
    }
    if (call->easy) {
        curl_easy_cleanup(call->easy);
    }
    /* the list holds the secret headers */
    for (struct curl_slist *l = call->headers; l; l = l->next) {
        OPENSSL_cleanse(l->data, strlen(l->data));
    }
    curl_slist_free_all(call->headers);
    buf_done(&call->body);
    buf_done(&call->answer);
    free(call);
}

/* "connector crm (crm.lookup): " + what */
static void connector_fail(struct connector_call *call, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void connector_fail(struct connector_call *call, const char *fmt, ...)
{
    char what[CONNECTOR_MESSAGE_MAX];
    char message[CONNECTOR_MESSAGE_MAX + 160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (call->post_done) {
        snprintf(message, sizeof message, "%s: %s", call->target->name, what);
        call->post_done(call->userdata, 0, message);
        return;
    }
    snprintf(message, sizeof message, "connector %s (%s.%s): %s", call->target->name,
             call->target->name, call->fn->name, what);
    call->done(call->userdata, CONNECTOR_FAILED, NULL, 0, message);
}

static size_t connector_write(char *data, size_t size, size_t n, void *userdata)
{
    struct connector_call *call = userdata;
    if (buf_append(&call->answer, data, size * n) != BUF_OK) {
        call->too_big = 1;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    return size * n;
}

/* The answer of a finished transfer, judged; calls done. */
static void connector_judge(struct connector_call *call, CURLcode code)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    long status = 0;
    memset(&err, 0, sizeof err);
    if (call->too_big || code == CURLE_FILESIZE_EXCEEDED) {
        connector_fail(call, "the answer is over %zu bytes", CONNECTOR_ANSWER_MAX);
        goto out;
    }
    switch (code) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        connector_fail(call, "timed out after %lld ms", (long long)call->target->timeout_ms);
        goto out;
    case CURLE_COULDNT_CONNECT:
        connector_fail(call, "connection refused");
        goto out;
    case CURLE_COULDNT_RESOLVE_HOST:
        connector_fail(call, "cannot resolve its host");
        goto out;
    case CURLE_GOT_NOTHING:
        connector_fail(call, "closed the connection without an answer");
        goto out;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
        connector_fail(call, "closed the connection mid-answer");
        goto out;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        connector_fail(call, "TLS failed (%s)", curl_easy_strerror(code));
        goto out;
    default:
        connector_fail(call, "the call failed (%s)", curl_easy_strerror(code));
        goto out;
    }
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
    if (call->post_done && status >= 200 && status < 300) {
        call->post_done(call->userdata, 1, NULL); /* a post's answer is its status alone */
        goto out;
    }
    if (status != 200 || call->post_done) {
        connector_fail(call, "answered HTTP %ld", status);
        goto out;
    }
    const char *text = call->answer.data ? call->answer.data : "";
    if (json_parse(text, call->answer.len, CONNECTOR_JSON_DEPTH, &doc, &err) != AL_OK) {
        connector_fail(call, "the answer is not JSON");
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *result = root->type == JSON_OBJECT ? json_get(root, "result") : NULL;
    const struct json_node *error = root->type == JSON_OBJECT ? json_get(root, "error") : NULL;
    if (root->type != JSON_OBJECT || root->count != 1 || (!result && !error) ||
        (error && error->type != JSON_STRING)) {
        connector_fail(call, "the answer is neither {\"result\":...} nor {\"error\":\"...\"}");
        goto out;
    }
    if (error) {
        size_t len = error->str_len > CONNECTOR_ERROR_MAX
                             ? utf8_cut(error->str, CONNECTOR_ERROR_MAX)
                             : error->str_len;
        size_t clean_len = 0;
        char *clean = utf8_valid_dup(error->str, len, 0, &clean_len);
        /* a NUL inside would end the message early: it stays readable up to there */
        connector_fail(call, "%s%s", clean ? clean : "", len < error->str_len ? "..." : "");
        free(clean);
        goto out;
    }
    if (call->fn->result && schema_validate_node(call->fn->result, result, &err) != AL_OK) {
        connector_fail(call, "the result breaks result_schema: %s", err.message);
        goto out;
    }
    /* the member's text, NUL-terminated in place (the answer buffer is ours) */
    char *start = (char *)result->raw;
    char saved = start[result->raw_len];
    start[result->raw_len] = '\0';
    call->done(call->userdata, CONNECTOR_RETURNED, start, result->raw_len, NULL);
    start[result->raw_len] = saved;
out:
    json_doc_free(doc);
}

static void connector_finish(struct connector_client *c, struct connector_call *call, CURLcode code,
                             const char *cancelled)
{
    struct connector_call **p = &c->active;
    while (*p && *p != call) {
        p = &(*p)->next;
    }
    if (*p) {
        *p = call->next;
    }
    if (call->easy) {
        curl_multi_remove_handle(c->multi, call->easy);
    }
    if (cancelled) {
        connector_fail(call, "%s", cancelled);
    } else {
        connector_judge(call, code);
    }
    connector_call_free(call);
}

/* Adds a handed-over call to the multi handle, or completes it now (its arguments failed). */
static void connector_start(struct connector_client *c, struct connector_call *call)
{
    if (call->args_refused[0]) {
        call->done(call->userdata, CONNECTOR_ARGS_REFUSED, NULL, 0, call->args_refused);
        connector_call_free(call);
        return;
    }
    if (curl_multi_add_handle(c->multi, call->easy) != CURLM_OK) {
        connector_fail(call, "cannot start the call");
        connector_call_free(call);
        return;
    }
    call->next = c->active;
    c->active = call;
}

static void *connector_thread(void *arg)
{
    struct connector_client *c = arg;
    pthread_setname_np(pthread_self(), "airlockd-curl"); /* named in top -H and perf */
    int stopping = 0;
    while (!stopping) {
        pthread_mutex_lock(&c->lock);
        struct connector_call *queue = c->queue;
        c->queue = NULL;
        c->tail = &c->queue;
        stopping = c->stopping;
        pthread_mutex_unlock(&c->lock);
        while (queue) {
            struct connector_call *next = queue->next;
            if (stopping) {
                connector_fail(queue, "airlockd is stopping");
                connector_call_free(queue);
            } else {
                connector_start(c, queue);
            }
            queue = next;
        }
        if (stopping) {
            break;
        }
        int running = 0;
        curl_multi_perform(c->multi, &running);
        CURLMsg *msg;
        int left = 0;
        while ((msg = curl_multi_info_read(c->multi, &left))) {
            if (msg->msg != CURLMSG_DONE) {
                continue;
            }
            struct connector_call *call = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&call);
            CURLcode code = msg->data.result;
            if (call) {
                connector_finish(c, call, code, NULL);
            }
        }
        for (struct connector_call *call = c->active, *next; call; call = next) {
            next = call->next;
            if (call->cancelled && call->cancelled(call->userdata)) {
                connector_finish(c, call, CURLE_OK, "cancelled");
            }
        }
        curl_multi_poll(c->multi, NULL, 0, CONNECTOR_CANCEL_POLL_MS, NULL);
    }
    while (c->active) {
        connector_finish(c, c->active, CURLE_OK, "airlockd is stopping");
    }
    return NULL;
}

struct connector_client *connector_client_new(void)
{
    struct connector_client *c = NULL;
    pthread_once(&connector_curl_once, connector_curl_init);
    if (!connector_curl_ok) {
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (!c || !(c->multi = curl_multi_init())) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->tail = &c->queue;
    if (pthread_create(&c->thread, NULL, connector_thread, c) != 0) {
        pthread_mutex_destroy(&c->lock);
        curl_multi_cleanup(c->multi);
        free(c);
        return NULL;
    }
    return c;
}

void connector_client_free(struct connector_client *c)
{
    if (!c) {
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_mutex_unlock(&c->lock);
    curl_multi_wakeup(c->multi);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->lock);
    curl_multi_cleanup(c->multi);
    free(c);
}

static void connector_opt_str(struct buf *b, const char *name, const char *value)
{
    buf_printf(b, ",\"%s\":", name);
    json_write_string(b, value ? value : "", value ? strlen(value) : 0);
}

/* The signature, the headers and the easy handle of a call whose body is ready. -1 when out of
 * memory. */
static int connector_setup(struct connector_call *call)
{
    const struct connector_target *t = call->target;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char mac_hex[2 * EVP_MAX_MD_SIZE + 1];
    char sig[64 + 2 * EVP_MAX_MD_SIZE];
    char stamp[32];
    struct buf signed_text;
    int rc = -1;
    buf_init(&signed_text, CONNECTOR_BODY_MAX + 32);

    snprintf(stamp, sizeof stamp, "%lld", (long long)time(NULL));
    if (buf_printf(&signed_text, "%s.", stamp) != BUF_OK ||
        buf_append(&signed_text, call->body.data, call->body.len) != BUF_OK ||
        !HMAC(EVP_sha256(), t->secret, (int)t->secret_len, (const unsigned char *)signed_text.data,
              signed_text.len, mac, &mac_len)) {
        goto out;
    }
    hex_encode(mac, mac_len, mac_hex);
    snprintf(sig, sizeof sig, "X-Airlock-Signature: t=%s,v1=%s", stamp, mac_hex);

    /* the connector's headers, then airlockd's own */
    const char *own[] = { "Content-Type: application/json", "Expect:", "Accept: application/json",
                          sig };
    for (size_t i = 0; i < t->nheaders + sizeof own / sizeof own[0]; i++) {
        const char *h = i < t->nheaders ? t->headers[i] : own[i - t->nheaders];
        struct curl_slist *l = curl_slist_append(call->headers, h);
        if (!l) {
            goto out;
        }
        call->headers = l;
    }

    CURL *e = curl_easy_init();
    if (!e) {
        goto out;
    }
    call->easy = e;
    long timeout = (long)t->timeout_ms;
    int bad = 0;
    bad |= curl_easy_setopt(e, CURLOPT_URL, t->url) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CONNECTOR_ANSWER_MAX) !=
           CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "airlockd") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_POST, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body.data) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->body.len) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, connector_write) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, call) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PRIVATE, call) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->curl_err) != CURLE_OK;
    if (bad) {
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(mac, sizeof mac);
    buf_done(&signed_text);
    return rc;
}

/* The body of a call, then the rest. -1 when out of memory. */
static int connector_prepare(struct connector_call *call, const struct connector_request *req)
{
    const struct connector_target *t = call->target;
    /* names checked at registration (identifiers): nothing to escape */
    buf_printf(&call->body, "{\"function\":\"%s.%s\",\"args\":", t->name, call->fn->name);
    buf_append_str(&call->body, req->args_json);
    connector_opt_str(&call->body, "run", req->run_id);
    connector_opt_str(&call->body, "template", req->template_name);
    buf_printf(&call->body, ",\"version\":%lld", (long long)req->version);
    connector_opt_str(&call->body, "principal", req->principal);
    buf_printf(&call->body, ",\"call\":%u", (unsigned)req->call);
    connector_opt_str(&call->body, "idempotency_key", req->idempotency_key);
    if (buf_append_str(&call->body, "}") != BUF_OK) {
        return -1;
    }
    return connector_setup(call);
}

/* Hands a prepared call to the client's thread. 0, or -1 when the client is stopping. */
static int connector_enqueue(struct connector_client *c, struct connector_call *call)
{
    pthread_mutex_lock(&c->lock);
    if (c->stopping) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    *c->tail = call;
    c->tail = &call->next;
    pthread_mutex_unlock(&c->lock);
    curl_multi_wakeup(c->multi);
    return 0;
}

struct connector_target *connector_target_new(const char *name, const char *url, const char *secret,
                                              int64_t timeout_ms)
{
    struct connector_target *t = calloc(1, sizeof *t);
    if (!t) {
        return NULL;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->url = buf_dup(url, strlen(url));
    t->secret = buf_dup(secret, strlen(secret));
    t->secret_len = strlen(secret);
    t->timeout_ms = timeout_ms;
    if (!t->url || !t->secret) {
        connector_target_free(t);
        return NULL;
    }
    return t;
}

int connector_client_post(struct connector_client *c, const struct connector_target *t,
                          const char *body, size_t len, connector_post_fn *done, void *userdata)
{
    struct connector_call *call = NULL;
    if (!c || !t || !body || !done || !(call = calloc(1, sizeof *call))) {
        return -1;
    }
    call->target = t;
    call->post_done = done;
    call->userdata = userdata;
    buf_init(&call->body, CONNECTOR_BODY_MAX);
    buf_init(&call->answer, CONNECTOR_ANSWER_MAX);
    if (buf_append(&call->body, body, len) != BUF_OK || connector_setup(call) != 0 ||
        connector_enqueue(c, call) != 0) {
        connector_call_free(call);
        return -1;
    }
    return 0;
}

int connector_client_call(struct connector_client *c, const struct connector_request *req,
                          connector_done_fn *done, void *userdata)
{
    struct connector_call *call = NULL;
    struct json_doc *doc = NULL;
    struct al_error err;
    int rc = -1;
    memset(&err, 0, sizeof err);
    if (!c || !req || !req->target || !req->function || !req->args_json || !done) {
        goto out;
    }
    const struct connector_fn *fn = connector_find(req->target, req->function);
    if (!fn ||
        json_parse(req->args_json, strlen(req->args_json), CONNECTOR_JSON_DEPTH, &doc, &err) !=
                AL_OK ||
        json_root(doc)->type != JSON_ARRAY) {
        goto out;
    }
    call = calloc(1, sizeof *call);
    if (!call) {
        goto out;
    }
    call->target = req->target;
    call->fn = fn;
    call->done = done;
    call->userdata = userdata;
    call->cancelled = req->cancelled;
    buf_init(&call->body, CONNECTOR_BODY_MAX);
    buf_init(&call->answer, CONNECTOR_ANSWER_MAX);
    if (connector_args_keep(req->target, fn, json_root(doc), call->args_refused,
                            sizeof call->args_refused) != 0) {
        /* completed on the client thread, as every other outcome */
    } else if (connector_prepare(call, req) != 0) {
        goto out;
    }
    if (connector_enqueue(c, call) != 0) {
        goto out;
    }
    call = NULL;
    rc = 0;
out:
    connector_call_free(call);
    json_doc_free(doc);
    return rc;
}
