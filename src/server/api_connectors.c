/*
 * api_connectors.c - registering HTTP connectors (admin) and reading them back. A connector's
 * name becomes a global object of the guest ("crm" serves crm.lookup), so it must be a
 * lowercase JavaScript identifier that no guest global, keyword or inherited member already
 * is. The signing secret and the header values are sealed (secretbox.h) before they reach the
 * store, bound to the connector's name and field; nothing here ever writes them to an answer,
 * a log line or the audit log, which name the headers only. Every function's schemas are
 * compiled at registration, so a schema the client could not honour is refused then, not at
 * the first call. The change and its audit record are one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "guest.h"
#include "schema.h"
#include "secretbox.h"

#define API_CONNECTOR_TIMEOUT_DEFAULT 5000
#define API_CONNECTOR_TIMEOUT_MAX     60000
#define API_CONNECTOR_URL_MAX         2048
#define API_CONNECTOR_SECRET_MIN      16
#define API_CONNECTOR_SECRET_MAX      1024
#define API_CONNECTOR_HEADERS_MAX     32
#define API_CONNECTOR_HEADER_NAME_MAX 128
#define API_CONNECTOR_HEADER_MAX      4096
#define API_CONNECTOR_FUNCTIONS_MAX   64
#define API_CONNECTOR_FUNCTION_MAX    64 /* bytes of a function's name */
#define API_CONNECTOR_DESCRIPTION_MAX 4096

/* What the guest already has, or what the language gives every object: never a connector's or
 * a function's name (mirrors the lists of src/lib/runner.c, plus the template's `input` and the
 * words JavaScript reserves). */
static const char *const api_reserved[] = {
    "constructor", "__proto__", "__defineGetter__", "__defineSetter__", "__lookupGetter__",
    "__lookupSetter__", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toString",
    "toLocaleString", "valueOf", "then", "prototype", "caller", "arguments",
    /* guest globals */
    "Object", "Function", "Array", "Number", "parseFloat", "parseInt", "Infinity", "NaN",
    "undefined", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape",
    "unescape", "isFinite", "isNaN", "eval", "globalThis", "Boolean", "Symbol", "Error",
    "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError",
    "InternalError", "AggregateError", "Iterator", "Math", "Reflect", "JSON", "Date", "String",
    "RegExp", "Proxy", "Map", "Set", "WeakMap", "WeakSet", "ArrayBuffer", "DataView", "Int8Array",
    "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
    "BigInt64Array", "BigUint64Array", "Float32Array", "Float64Array", "Promise", "BigInt",
    "console", "input",
    /* reserved words */
    "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
    "delete", "do", "else", "enum", "export", "extends", "false", "finally", "for", "function",
    "if", "implements", "import", "in", "instanceof", "interface", "let", "new", "null", "package",
    "private", "protected", "public", "return", "static", "super", "switch", "this", "throw",
    "true", "try", "typeof", "var", "void", "while", "with", "yield", "arguments", "async", "of",
    "get", "set"
};

static int api_connector_reserved(const char *s)
{
    for (size_t i = 0; i < sizeof api_reserved / sizeof api_reserved[0]; i++) {
        if (strcmp(s, api_reserved[i]) == 0) {
            return 1;
        }
    }
    for (size_t i = 0; i < guest_removed_globals_count; i++) {
        if (strcmp(s, guest_removed_globals[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* [a-z][a-z0-9_]* up to STORE_NAME_MAX, not reserved. */
static int api_connector_name_ok(const char *s)
{
    size_t len = strlen(s);
    return len <= STORE_NAME_MAX && s[0] >= 'a' && s[0] <= 'z' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == len && !api_connector_reserved(s);
}

/* A JavaScript identifier of ASCII letters, digits, _ and $, not reserved. */
static int api_function_name_ok(const char *s, size_t len)
{
    return len > 0 && len <= API_CONNECTOR_FUNCTION_MAX && !(s[0] >= '0' && s[0] <= '9') &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$") == len &&
           !api_connector_reserved(s);
}

int api_url_ok(const char *url, size_t len)
{
    size_t scheme = strncmp(url, "http://", 7) == 0 ? 7 : strncmp(url, "https://", 8) == 0 ? 8 : 0;
    if (scheme == 0 || len > API_CONNECTOR_URL_MAX || strlen(url) != len) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (url[i] <= 0x20 || url[i] >= 0x7f || url[i] == '\\') {
            return 0;
        }
    }
    size_t end = scheme + strcspn(url + scheme, "/?#");
    if (end == scheme || memchr(url + scheme, '@', end - scheme)) {
        return 0;
    }
    /* the host (or [v6]) then an optional :port of digits */
    const char *auth = url + scheme;
    size_t alen = end - scheme;
    const char *colon = NULL;
    if (auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        if (!close || close == auth + 1) {
            return 0;
        }
        if ((size_t)(close - auth) + 1 < alen) {
            if (close[1] != ':') {
                return 0;
            }
            colon = close + 1;
        }
    } else {
        colon = memchr(auth, ':', alen);
        if (colon == auth) {
            return 0;
        }
    }
    if (colon) {
        /* the authority ends at '/', '?', '#' or the end, none of them a digit */
        size_t plen = (size_t)(auth + alen - colon - 1);
        if (plen == 0 || plen > 5 || strspn(colon + 1, "0123456789") != plen ||
            strtol(colon + 1, NULL, 10) > 65535) {
            return 0;
        }
    }
    return 1;
}

/* RFC 9110 token characters. */
static int api_header_name_ok(const char *s, size_t len)
{
    static const char token[] = "!#$%&'*+-.^_`|~0123456789"
                                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if (len == 0 || len > API_CONNECTOR_HEADER_NAME_MAX || strspn(s, token) != len) {
        return 0;
    }
    /* the client sets these itself */
    static const char *const own[] = { "content-type",
                                       "content-length",
                                       "host",
                                       "x-airlock-signature",
                                       "transfer-encoding",
                                       "connection",
                                       "expect",
                                       "te",
                                       "upgrade",
                                       "keep-alive",
                                       "proxy-connection",
                                       "trailer" };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (strcasecmp(s, own[i]) == 0) {
            return 0;
        }
    }
    return 1;
}

/* Visible ASCII, space and tab (never CR, LF or NUL); UTF-8 beyond ASCII is refused too, as
 * header values are bytes the connector may read in another encoding. */
static int api_header_value_ok(const char *s, size_t len)
{
    if (len > API_CONNECTOR_HEADER_MAX || strlen(s) != len) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

static void api_connector_json(struct buf *b, const struct store_connector *c)
{
    api_member(b, "{\"name\":", c->name);
    api_member(b, ",\"department\":", c->department);
    api_member(b, ",\"url\":", c->url);
    /* stored compact by this file: valid JSON */
    buf_printf(b, ",\"header_names\":%s,\"timeout_ms\":%lld,\"functions\":%s", c->header_names,
               (long long)c->timeout_ms, c->functions);
    api_member(b, ",\"created\":", c->created);
    api_member(b, ",\"created_by\":", c->created_by);
    buf_append_str(b, "}");
}

/* Checks one function's definition and appends its normalised form to `out` and its flags to
 * `flags` (the audit's view). 0, or -1 after answering 400. */
static int api_connector_function(struct api_ctx *ctx, const struct json_node *fn, struct buf *out,
                                  struct buf *flags)
{
    const struct json_node *description = NULL;
    const struct json_node *schemas[2] = { NULL, NULL };
    const char *schema_names[2] = { "args_schema", "result_schema" };
    int sensitive = 0;
    int idempotent = 0;
    struct al_error err;
    if (fn->type != JSON_OBJECT) {
        api_error(ctx, 400, "INVALID_REQUEST", "function \"%s\" must be an object", fn->key);
        return -1;
    }
    for (const struct json_node *m = fn->child; m; m = m->next) {
        int is_bool = m->type == JSON_TRUE || m->type == JSON_FALSE;
        if (strcmp(m->key, "description") == 0 && m->type == JSON_STRING && !description &&
            m->str_len <= API_CONNECTOR_DESCRIPTION_MAX && strlen(m->str) == m->str_len) {
            description = m;
        } else if (strcmp(m->key, "args_schema") == 0 && !schemas[0]) {
            schemas[0] = m;
        } else if (strcmp(m->key, "result_schema") == 0 && !schemas[1]) {
            schemas[1] = m;
        } else if (strcmp(m->key, "sensitive") == 0 && is_bool) {
            sensitive = m->type == JSON_TRUE;
        } else if (strcmp(m->key, "idempotent") == 0 && is_bool) {
            idempotent = m->type == JSON_TRUE;
        } else {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "function \"%s\": unknown, repeated or malformed member \"%.64s\" (known: "
                      "description (a string), args_schema, result_schema, sensitive and "
                      "idempotent (booleans))",
                      fn->key, m->key);
            return -1;
        }
    }
    buf_append_str(out, "{");
    if (description) {
        buf_append_str(out, "\"description\":");
        json_write_string(out, description->str, description->str_len);
        buf_append_str(out, ",");
    }
    for (int i = 0; i < 2; i++) {
        struct schema *compiled = NULL;
        if (!schemas[i]) {
            continue;
        }
        memset(&err, 0, sizeof err);
        if (schema_compile(schemas[i]->raw, schemas[i]->raw_len, &compiled, &err) != AL_OK) {
            api_error(ctx, 400, "INVALID_REQUEST", "function \"%s\": %s: %s", fn->key,
                      schema_names[i], err.message);
            return -1;
        }
        schema_free(compiled);
        buf_printf(out, "\"%s\":", schema_names[i]);
        json_write_compact(out, schemas[i]->raw, schemas[i]->raw_len);
        buf_append_str(out, ",");
    }
    buf_printf(out, "\"sensitive\":%s,\"idempotent\":%s}", sensitive ? "true" : "false",
               idempotent ? "true" : "false");
    buf_printf(flags, "{\"sensitive\":%s,\"idempotent\":%s}", sensitive ? "true" : "false",
               idempotent ? "true" : "false");
    return 0;
}

/* The functions member: its normalised text into `out`, "name":{flags} pairs into `flags`. */
static int api_connector_functions(struct api_ctx *ctx, const struct json_node *fns,
                                   struct buf *out, struct buf *flags)
{
    if (fns->count > API_CONNECTOR_FUNCTIONS_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"functions\": at most %d functions",
                  API_CONNECTOR_FUNCTIONS_MAX);
        return -1;
    }
    buf_append_str(out, "{");
    buf_append_str(flags, "{");
    for (const struct json_node *fn = fns->child; fn; fn = fn->next) {
        if (!api_function_name_ok(fn->key, fn->key_len)) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "function name \"%.64s\" must be a JavaScript identifier ([A-Za-z_$]"
                      "[A-Za-z0-9_$]*, at most %d bytes) that is not reserved",
                      fn->key, API_CONNECTOR_FUNCTION_MAX);
            return -1;
        }
        for (const struct json_node *o = fns->child; o != fn; o = o->next) {
            if (strcmp(o->key, fn->key) == 0) {
                api_error(ctx, 400, "INVALID_REQUEST", "function \"%s\" appears twice", fn->key);
                return -1;
            }
        }
        if (fn != fns->child) {
            buf_append_str(out, ",");
            buf_append_str(flags, ",");
        }
        api_str(out, fn->key);
        buf_append_str(out, ":");
        api_str(flags, fn->key);
        buf_append_str(flags, ":");
        if (api_connector_function(ctx, fn, out, flags) != 0) {
            return -1;
        }
    }
    buf_append_str(out, "}");
    buf_append_str(flags, "}");
    return 0;
}

/* The headers member: every value checked; the plain object into `plain` (to be sealed), the
 * names as a JSON array into `names`. */
static int api_connector_headers(struct api_ctx *ctx, const struct json_node *headers,
                                 struct buf *plain, struct buf *names)
{
    buf_append_str(plain, "{");
    buf_append_str(names, "[");
    if (headers && headers->count > API_CONNECTOR_HEADERS_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"headers\": at most %d headers",
                  API_CONNECTOR_HEADERS_MAX);
        return -1;
    }
    for (const struct json_node *h = headers ? headers->child : NULL; h; h = h->next) {
        if (!api_header_name_ok(h->key, h->key_len)) {
            api_error(ctx, 400, "INVALID_REQUEST",
                      "header name \"%.64s\" is not a valid HTTP field name, or one airlockd "
                      "sets itself",
                      h->key);
            return -1;
        }
        if (h->type != JSON_STRING || !api_header_value_ok(h->str, h->str_len)) {
            /* the value is never echoed: it is a secret */
            api_error(ctx, 400, "INVALID_REQUEST",
                      "header \"%s\" must be a string of at most %d printable ASCII characters "
                      "(no CR, LF or NUL)",
                      h->key, API_CONNECTOR_HEADER_MAX);
            return -1;
        }
        for (const struct json_node *o = headers->child; o != h; o = o->next) {
            if (strcasecmp(o->key, h->key) == 0) {
                api_error(ctx, 400, "INVALID_REQUEST", "header \"%s\" appears twice", h->key);
                return -1;
            }
        }
        if (h != headers->child) {
            buf_append_str(plain, ",");
            buf_append_str(names, ",");
        }
        api_str(plain, h->key);
        buf_append_str(plain, ":");
        json_write_string(plain, h->str, h->str_len);
        api_str(names, h->key);
    }
    buf_append_str(plain, "}");
    buf_append_str(names, "]");
    return 0;
}

static int api_built(const struct buf *b)
{
    return b->data && json_check(b->data, b->len, API_DEPTH_MAX + SCHEMA_JSON_DEPTH, NULL) == AL_OK;
}

static int api_connector_one(void *userdata, const struct store_connector *c)
{
    api_connector_json(userdata, c);
    return 0;
}

void api_connectors_create(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const struct json_node *name = NULL;
    const struct json_node *department = NULL;
    const struct json_node *url = NULL;
    const struct json_node *secret = NULL;
    const struct json_node *headers = NULL;
    const struct json_node *timeout = NULL;
    const struct json_node *functions = NULL;
    const struct api_field fields[] = {
        { "name", JSON_STRING, 1, &name },
        { "department", JSON_STRING, 1, &department },
        { "url", JSON_STRING, 1, &url },
        { "signing_secret", JSON_STRING, 1, &secret },
        { "headers", JSON_OBJECT, 0, &headers },
        { "timeout_ms", JSON_NUMBER, 0, &timeout },
        { "functions", JSON_OBJECT, 1, &functions },
    };
    struct buf fns;
    struct buf flags;
    struct buf plain_headers;
    struct buf names;
    struct buf details;
    char context[STORE_NAME_MAX + 64];
    char *sealed_secret = NULL;
    char *sealed_headers = NULL;
    buf_init(&fns, (size_t)1 << 20);
    buf_init(&flags, (size_t)64 << 10);
    buf_init(&plain_headers, (size_t)256 << 10);
    buf_init(&names, (size_t)16 << 10);
    buf_init(&details, (size_t)128 << 10);
    if (api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        goto out;
    }
    if (!api_connector_name_ok(name->str)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"name\" must match [a-z][a-z0-9_]{0,63} and not be a JavaScript "
                  "global or reserved word (it is the guest's object of the functions)");
        goto out;
    }
    if (!api_name_ok(department->str)) {
        api_error(ctx, 400, "INVALID_REQUEST", "field \"department\" is not a department name");
        goto out;
    }
    if (strpbrk(url->str, "?#")) { /* named, never shown: it may hold a credential */
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"url\" must have no query or fragment: the URL is stored in the clear "
                  "and shown to the department, so credentials go in \"headers\", which are "
                  "sealed");
        goto out;
    }
    if (!api_url_ok(url->str, url->str_len)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"url\" must be an http:// or https:// URL with a host, without "
                  "userinfo or spaces, at most %d bytes",
                  API_CONNECTOR_URL_MAX);
        goto out;
    }
    if (secret->str_len < API_CONNECTOR_SECRET_MIN || secret->str_len > API_CONNECTOR_SECRET_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"signing_secret\" must be %d to %d bytes long", API_CONNECTOR_SECRET_MIN,
                  API_CONNECTOR_SECRET_MAX);
        goto out;
    }
    if (timeout && (timeout->num < 1 || timeout->num > API_CONNECTOR_TIMEOUT_MAX ||
                    timeout->num != (double)(int64_t)timeout->num)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"timeout_ms\" must be an integer from 1 to %d",
                  API_CONNECTOR_TIMEOUT_MAX);
        goto out;
    }
    int64_t timeout_ms = timeout ? (int64_t)timeout->num : API_CONNECTOR_TIMEOUT_DEFAULT;
    if (api_connector_headers(ctx, headers, &plain_headers, &names) != 0 ||
        api_connector_functions(ctx, functions, &fns, &flags) != 0) {
        goto out;
    }
    /* a capped buffer refuses an append whole and takes the next: what was built must still be
     * the JSON it was meant to be */
    if (!api_built(&fns) || !api_built(&flags) || !api_built(&plain_headers) ||
        !api_built(&names)) {
        api_error(ctx, 400, "INVALID_REQUEST", "the connector's definition is too large");
        goto out;
    }
    if (!ctx->secret_key) {
        api_error(ctx, 500, "INTERNAL", "no key to seal connector secrets");
        goto out;
    }
    snprintf(context, sizeof context, "connector/%s/signing_secret", name->str);
    if (secretbox_seal(ctx->secret_key, context, secret->str, secret->str_len, &sealed_secret) !=
        0) {
        api_error(ctx, 500, "INTERNAL", "cannot seal the signing secret");
        goto out;
    }
    snprintf(context, sizeof context, "connector/%s/headers", name->str);
    if (secretbox_seal(ctx->secret_key, context, plain_headers.data, plain_headers.len,
                       &sealed_headers) != 0) {
        api_error(ctx, 500, "INTERNAL", "cannot seal the headers");
        goto out;
    }
    /* The audit sees the names of headers, never their values nor the secret. */
    api_member(&details, "{\"url\":", url->str);
    api_member(&details, ",\"department\":", department->str);
    buf_printf(&details, ",\"timeout_ms\":%lld,\"header_names\":%s,\"functions\":%s}",
               (long long)timeout_ms, names.data, flags.data);
    if (!api_built(&details)) {
        api_error(ctx, 400, "INVALID_REQUEST", "the connector's definition is too large");
        goto out;
    }
    struct store_connector c = { name->str,      department->str,
                                 url->str,       sealed_secret,
                                 sealed_headers, names.data,
                                 fns.data,       timeout_ms,
                                 NULL,           ctx->who ? ctx->who->name : "airlockd" };
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = s->ops->connector_create(s, &c);
    if (rc == STORE_OK) {
        rc = api_audit(ctx, "connector.create", name->str, department->str, details.data);
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 409, "CONFLICT", "connector %s exists", name->str);
    } else if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 400, "INVALID_REQUEST", "no department %s", department->str);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_reply(ctx, 201);
        if (s->ops->connector_get(s, name->str, api_connector_one, &ctx->resp->body) == STORE_OK) {
            buf_append_str(&ctx->resp->body, "\n");
        } else {
            api_store_failed(ctx);
        }
    }
out:
    free(sealed_secret);
    free(sealed_headers);
    if (plain_headers.data) {
        memset(plain_headers.data, 0, plain_headers.len);
    }
    buf_done(&plain_headers);
    buf_done(&fns);
    buf_done(&flags);
    buf_done(&names);
    buf_done(&details);
}

struct api_connector_list {
    struct api_ctx *ctx;
    struct buf *b;
    int n;
};

/* The list shows a connector to whoever holds one of the route's roles in its department. */
static int api_connector_item(void *userdata, const struct store_connector *c)
{
    struct api_connector_list *l = userdata;
    struct auth_rule rule = { AUTH_DEPARTMENT, l->ctx->rule.roles };
    char why[AUTH_WHY_MAX];
    if (auth_check(l->ctx->who, &rule, c->department, why) != AUTH_OK) {
        return 0;
    }
    if (l->n++) {
        buf_append_str(l->b, ",");
    }
    api_connector_json(l->b, c);
    return 0;
}

void api_connectors_list(struct api_ctx *ctx)
{
    struct api_connector_list l = { ctx, &ctx->resp->body, 0 };
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_append_str(l.b, "[");
    if (!ctx->who ||
        ctx->store->ops->connector_list(ctx->store, api_connector_item, &l) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_append_str(l.b, "]\n");
}

struct api_connector_found {
    struct buf b;
    char department[STORE_NAME_MAX + 1];
};

static int api_connector_keep(void *userdata, const struct store_connector *c)
{
    struct api_connector_found *f = userdata;
    snprintf(f->department, sizeof f->department, "%s", c->department);
    api_connector_json(&f->b, c);
    return 0;
}

void api_connectors_get(struct api_ctx *ctx)
{
    struct api_connector_found found;
    const char *name = api_param(ctx, "c");
    memset(&found, 0, sizeof found);
    buf_init(&found.b, (size_t)4 << 20);
    if (api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    enum store_rc rc = ctx->store->ops->connector_get(ctx->store, name, api_connector_keep, &found);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no connector %.64s", name);
        goto out;
    }
    if (rc != STORE_OK || !found.b.data) {
        api_store_failed(ctx);
        goto out;
    }
    if (api_allow(ctx, found.department) != 0) {
        goto out;
    }
    api_reply(ctx, 200);
    buf_append(&ctx->resp->body, found.b.data, found.b.len);
    buf_append_str(&ctx->resp->body, "\n");
out:
    buf_done(&found.b);
}
