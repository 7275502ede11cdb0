/*
 * api_connectors.c - registering HTTP connectors (admin) and reading them back. A connector's
 * name becomes a global object of the guest ("crm" serves crm.lookup), so it must be a
 * lowercase JavaScript identifier that no guest global, keyword or inherited member already
 * is. The signing secret and the header values are sealed (secretbox.h) before they reach the
 * store, bound to the connector's name and field; nothing here ever writes them to an answer,
 * a log line or the audit log, which name the headers only. Every function's schemas are
 * compiled at registration, so a schema the client could not honour is refused then, not at
 * the first call. The change and its audit record are one transaction.
 *
 * What was approved is what runs: a change of what an approved version may do through a
 * connector (its URL; a function it names added, removed, made sensitive or idempotent or not,
 * or given another args_schema) is refused while such a version is approved, unless the caller
 * asks to revoke those versions with it (?force=true), and so is deleting a connector an
 * approved version names. Headers, the signing secret, the timeout, descriptions and result
 * schemas change freely.
 */
#include <inttypes.h>
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

/* The url member: 0, or -1 after answering 400. */
static int api_connector_url_check(struct api_ctx *ctx, const struct json_node *url)
{
    if (strpbrk(url->str, "?#")) { /* named, never shown: it may hold a credential */
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"url\" must have no query or fragment: the URL is stored in the clear "
                  "and shown to the department, so credentials go in \"headers\", which are "
                  "sealed");
        return -1;
    }
    if (!api_url_ok(url->str, url->str_len)) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"url\" must be an http:// or https:// URL with a host, without "
                  "userinfo or spaces, at most %d bytes",
                  API_CONNECTOR_URL_MAX);
        return -1;
    }
    return 0;
}

/* The signing_secret member: 0, or -1 after answering 400. */
static int api_connector_secret_check(struct api_ctx *ctx, const struct json_node *secret)
{
    if (secret->str_len < API_CONNECTOR_SECRET_MIN || secret->str_len > API_CONNECTOR_SECRET_MAX) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"signing_secret\" must be %d to %d bytes long", API_CONNECTOR_SECRET_MIN,
                  API_CONNECTOR_SECRET_MAX);
        return -1;
    }
    return 0;
}

/* The timeout_ms member: 0, or -1 after answering 400. */
static int api_connector_timeout_check(struct api_ctx *ctx, const struct json_node *timeout)
{
    if (timeout->num < 1 || timeout->num > API_CONNECTOR_TIMEOUT_MAX ||
        timeout->num != (double)(int64_t)timeout->num) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "field \"timeout_ms\" must be an integer from 1 to %d",
                  API_CONNECTOR_TIMEOUT_MAX);
        return -1;
    }
    return 0;
}

/* Seals `len` bytes of connector `name`'s `field` (bound to both): the sealed text (the caller
 * frees it), or NULL after answering 500. */
static char *api_connector_seal(struct api_ctx *ctx, const char *name, const char *field,
                                const char *data, size_t len)
{
    char context[STORE_NAME_MAX + 64];
    char *sealed = NULL;
    if (!ctx->secret_keys) {
        api_error(ctx, 500, "INTERNAL", "no key to seal connector secrets");
        return NULL;
    }
    snprintf(context, sizeof context, "connector/%s/%s", name, field);
    if (secretbox_keys_seal(ctx->secret_keys, context, data, len, &sealed) != 0) {
        api_error(ctx, 500, "INTERNAL", "cannot seal the %s", field);
        return NULL;
    }
    return sealed;
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
    if (api_connector_url_check(ctx, url) != 0 || api_connector_secret_check(ctx, secret) != 0 ||
        (timeout && api_connector_timeout_check(ctx, timeout) != 0)) {
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
    sealed_secret =
            api_connector_seal(ctx, name->str, "signing_secret", secret->str, secret->str_len);
    sealed_headers = sealed_secret ? api_connector_seal(ctx, name->str, "headers",
                                                        plain_headers.data, plain_headers.len)
                                   : NULL;
    if (!sealed_headers) {
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

/* ---------------------------------------------------------------- changing and removing */

/* A connector as stored, copied for a change in its transaction. */
struct api_connector_row {
    int found;
    int lost; /* out of memory copying it */
    char department[STORE_NAME_MAX + 1];
    char *url, *signing_secret_sealed, *headers_sealed, *header_names, *functions;
    int64_t timeout_ms;
};

static char *api_dup(const char *s, int *lost)
{
    char *d = s ? buf_dup(s, strlen(s)) : NULL;
    *lost |= s && !d;
    return d;
}

static int api_connector_row_read(void *userdata, const struct store_connector *c)
{
    struct api_connector_row *row = userdata;
    row->found = 1;
    snprintf(row->department, sizeof row->department, "%s", c->department);
    row->url = api_dup(c->url, &row->lost);
    row->signing_secret_sealed = api_dup(c->signing_secret_sealed, &row->lost);
    row->headers_sealed = api_dup(c->headers_sealed, &row->lost);
    row->header_names = api_dup(c->header_names, &row->lost);
    row->functions = api_dup(c->functions, &row->lost);
    row->timeout_ms = c->timeout_ms;
    return 0;
}

static void api_connector_row_done(struct api_connector_row *row)
{
    free(row->url);
    free(row->signing_secret_sealed);
    free(row->headers_sealed);
    free(row->header_names);
    free(row->functions);
}

/* Reads connector `name` inside the caller's transaction: STORE_OK, NOT_FOUND, or STORE_ERROR. */
static enum store_rc api_connector_row_get(struct store *s, const char *name,
                                           struct api_connector_row *row)
{
    enum store_rc rc = s->ops->connector_get(s, name, api_connector_row_read, row);
    if (rc == STORE_OK && !row->found) {
        rc = STORE_NOT_FOUND;
    }
    return rc == STORE_OK && row->lost ? STORE_ERROR : rc;
}

/* What an approved version may do through a connector is its URL and, per function, that the
 * function exists and its sensitive and idempotent flags: the names of the functions whose
 * presence or flags differ between the stored definition `before` and `after` (normalised
 * objects, api_connector_functions) go to `changed` as a JSON array. 0, or -1 when one of them
 * is not the JSON this file stores. */
static int api_connector_changed_functions(const char *before, const char *after,
                                           struct buf *changed)
{
    struct json_doc *docs[2] = { NULL, NULL };
    const char *texts[2] = { before, after };
    int rc = -1;
    int n = 0;
    for (int i = 0; i < 2; i++) {
        if (json_parse(texts[i], strlen(texts[i]), API_DEPTH_MAX + SCHEMA_JSON_DEPTH, &docs[i],
                       NULL) != AL_OK ||
            json_root(docs[i])->type != JSON_OBJECT) {
            goto out;
        }
    }
    buf_append_str(changed, "[");
    for (int i = 0; i < 2; i++) {
        const struct json_node *other = json_root(docs[1 - i]);
        for (const struct json_node *fn = json_root(docs[i])->child; fn; fn = fn->next) {
            const struct json_node *same = json_get(other, fn->key);
            int differs = !same;
            for (int f = 0; same && f < 2 && i == 0; f++) {
                const char *flag = f ? "idempotent" : "sensitive";
                const struct json_node *a = json_get(fn, flag);
                const struct json_node *b = json_get(same, flag);
                differs |= (a && a->type == JSON_TRUE) != (b && b->type == JSON_TRUE);
            }
            /* the arguments a call may carry: a wider schema lets the approved source send what
             * its approvers saw refused (both texts are stored compact by this file) */
            if (same && i == 0) {
                const struct json_node *a = json_get(fn, "args_schema");
                const struct json_node *b = json_get(same, "args_schema");
                differs |= !a != !b || (a && (a->raw_len != b->raw_len ||
                                              memcmp(a->raw, b->raw, a->raw_len) != 0));
            }
            if (differs) {
                buf_append_str(changed, n++ ? "," : "");
                api_str(changed, fn->key);
            }
        }
    }
    buf_append_str(changed, "]");
    rc = 0;
out:
    json_doc_free(docs[0]);
    json_doc_free(docs[1]);
    return rc;
}

/* The approved versions a change of connector `name` touches: those naming any of its functions
 * (`all`), or one of the functions in the JSON array `changed`. */
struct api_connector_users {
    const char *name;
    int all;
    const struct json_node *changed; /* an array of function names, or NULL */
    size_t n, cap;
    struct api_connector_user {
        char template_name[STORE_NAME_MAX + 1];
        char department[STORE_NAME_MAX + 1];
        char digest[72];
        int64_t version;
    } * v;
    int failed;
};

static int api_connector_names(const struct api_connector_users *u, const char *fn)
{
    size_t len = strlen(u->name);
    if (strncmp(fn, u->name, len) != 0 || fn[len] != '.') {
        return 0;
    }
    if (u->all) {
        return 1;
    }
    for (const struct json_node *c = u->changed ? u->changed->child : NULL; c; c = c->next) {
        if (c->type == JSON_STRING && strcmp(c->str, fn + len + 1) == 0) {
            return 1;
        }
    }
    return 0;
}

static int api_connector_user(void *userdata, const struct store_version *v)
{
    struct api_connector_users *u = userdata;
    struct json_doc *doc = NULL;
    int uses = 0;
    if (json_parse(v->functions, strlen(v->functions), API_DEPTH_MAX, &doc, NULL) != AL_OK) {
        u->failed = 1;
        return 1;
    }
    for (const struct json_node *f = json_root(doc)->child; f && !uses; f = f->next) {
        uses = f->type == JSON_STRING && api_connector_names(u, f->str);
    }
    json_doc_free(doc);
    if (!uses) {
        return 0;
    }
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 8;
        void *more = realloc(u->v, cap * sizeof u->v[0]);
        if (!more) {
            u->failed = 1;
            return 1;
        }
        u->v = more;
        u->cap = cap;
    }
    struct api_connector_user *one = &u->v[u->n++];
    snprintf(one->template_name, sizeof one->template_name, "%s", v->template_name);
    snprintf(one->department, sizeof one->department, "%s", v->department);
    snprintf(one->digest, sizeof one->digest, "%s", v->digest);
    one->version = v->version;
    return 0;
}

/* Revokes the approved versions of `u` inside the caller's transaction, each as POST .../revoke
 * would (version.revoke with `reason`, its runs in progress cancelled), and lists them in
 * `details` as "revoked":[{"template","version"}]. */
static enum store_rc api_connector_revoke(struct api_ctx *ctx, const struct api_connector_users *u,
                                          const char *reason, struct buf *revoked)
{
    struct store *s = ctx->store;
    enum store_rc rc = STORE_OK;
    struct buf details;
    buf_init(&details, 16 * 1024);
    buf_append_str(revoked, "[");
    for (size_t i = 0; i < u->n && rc == STORE_OK; i++) {
        const struct api_connector_user *v = &u->v[i];
        rc = s->ops->version_set_state(s, v->template_name, v->version, "approved", "revoked",
                                       ctx->who->name, reason);
        buf_reset(&details);
        api_member(&details, "{\"template\":", v->template_name);
        buf_printf(&details,
                   ",\"version\":%" PRId64
                   ",\"digest\":\"%s\",\"from\":\"approved\",\"to\":\"revoked\"",
                   v->version, v->digest);
        api_member(&details, ",\"reason\":", reason);
        buf_append_str(&details, "}");
        if (rc == STORE_OK) {
            rc = details.data ? api_audit(ctx, "version.revoke", v->template_name, v->department,
                                          details.data)
                              : STORE_ERROR;
        }
        if (rc == STORE_OK) {
            rc = api_version_revoking(ctx, v->template_name, v->version);
        }
        api_member(revoked, i ? ",{\"template\":" : "{\"template\":", v->template_name);
        buf_printf(revoked, ",\"version\":%" PRId64 "}", v->version);
    }
    buf_append_str(revoked, "]");
    buf_done(&details);
    return rc;
}

/* Once the revoking transaction has committed: the versions' runs executing here stop. */
static void api_connector_revoked(struct api_ctx *ctx, const struct api_connector_users *u)
{
    for (size_t i = 0; i < u->n; i++) {
        api_version_revoked(ctx, u->v[i].template_name, u->v[i].version);
    }
}

/* 1 when the query says force=true; -1 after answering 400 for another value. */
static int api_force(struct api_ctx *ctx)
{
    const char *force = http_query(ctx->req, "force");
    if (!force || strcmp(force, "false") == 0) {
        return 0;
    }
    if (strcmp(force, "true") == 0) {
        return 1;
    }
    api_error(ctx, 400, "INVALID_REQUEST", "query \"force\" must be true or false");
    return -1;
}

/* Answers 409 naming the first approved version in the way. */
static void api_connector_in_use(struct api_ctx *ctx, const char *name, const char *what,
                                 const struct api_connector_users *u)
{
    api_error(ctx, 409, "CONFLICT",
              "%s connector %s would change what version %" PRId64 " of template %s (approved) "
              "may do, and %zu approved version(s) in all: revoke them first, or give "
              "?force=true to revoke them with it",
              what, name, u->v[0].version, u->v[0].template_name, u->n);
}

/* The approved versions a change or a deletion of connector `name` reaches (u): 409 and the
 * transaction rolled back unless force (1: answered), else revoked in it with the reason
 * "connector NAME DONE" (0, *rc the revocation's). */
static int api_connector_users_settle(struct api_ctx *ctx, const char *name, int force,
                                      const char *what, const char *done,
                                      struct api_connector_users *u, struct buf *revoked,
                                      enum store_rc *rc)
{
    char reason[STORE_NAME_MAX + 64];
    if (*rc == STORE_OK && u->n > 0 && !force) {
        ctx->store->ops->tx_rollback(ctx->store);
        api_connector_in_use(ctx, name, what, u);
        return 1;
    }
    snprintf(reason, sizeof reason, "connector %s %s", name, done);
    if (*rc == STORE_OK) {
        *rc = api_connector_revoke(ctx, u, reason, revoked);
    }
    return 0;
}

/* A PATCH's body, each member NULL when not given. */
struct api_connector_patch {
    const struct json_node *url, *secret, *headers, *timeout, *functions;
};

void api_connectors_patch(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *name = api_param(ctx, "c");
    struct api_connector_patch p = { NULL, NULL, NULL, NULL, NULL };
    const struct api_field fields[] = {
        { "url", JSON_STRING, 0, &p.url },
        { "signing_secret", JSON_STRING, 0, &p.secret },
        { "headers", JSON_OBJECT, 0, &p.headers },
        { "timeout_ms", JSON_NUMBER, 0, &p.timeout },
        { "functions", JSON_OBJECT, 0, &p.functions },
    };
    struct api_connector_row row;
    struct api_connector_users users;
    struct json_doc *changed_doc = NULL;
    struct buf fns, flags, plain_headers, names, changed, revoked, details;
    char *sealed_secret = NULL;
    char *sealed_headers = NULL;
    memset(&row, 0, sizeof row);
    memset(&users, 0, sizeof users);
    buf_init(&fns, (size_t)1 << 20);
    buf_init(&flags, (size_t)64 << 10);
    buf_init(&plain_headers, (size_t)256 << 10);
    buf_init(&names, (size_t)16 << 10);
    buf_init(&changed, (size_t)16 << 10);
    buf_init(&revoked, (size_t)64 << 10);
    buf_init(&details, (size_t)256 << 10);
    int force = api_force(ctx);
    if (force < 0 || api_body(ctx, fields, sizeof fields / sizeof fields[0]) != 0) {
        goto out;
    }
    if (!p.url && !p.secret && !p.headers && !p.timeout && !p.functions) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "nothing to change: give url, headers, signing_secret, functions or "
                  "timeout_ms");
        goto out;
    }
    if ((p.url && api_connector_url_check(ctx, p.url) != 0) ||
        (p.secret && api_connector_secret_check(ctx, p.secret) != 0) ||
        (p.timeout && api_connector_timeout_check(ctx, p.timeout) != 0) ||
        (p.headers && api_connector_headers(ctx, p.headers, &plain_headers, &names) != 0) ||
        (p.functions && api_connector_functions(ctx, p.functions, &fns, &flags) != 0)) {
        goto out;
    }
    if ((p.functions && (!api_built(&fns) || !api_built(&flags))) ||
        (p.headers && (!api_built(&plain_headers) || !api_built(&names)))) {
        api_error(ctx, 400, "INVALID_REQUEST", "the connector's definition is too large");
        goto out;
    }
    /* the new secrets sealed before the transaction: the writer never waits on it */
    if ((p.secret && !(sealed_secret = api_connector_seal(ctx, name, "signing_secret",
                                                          p.secret->str, p.secret->str_len))) ||
        (p.headers && !(sealed_headers = api_connector_seal(
                                ctx, name, "headers", plain_headers.data, plain_headers.len)))) {
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = api_connector_row_get(s, name, &row);
    const char *fn_text = p.functions ? fns.data : row.functions;
    const char *url = p.url ? p.url->str : row.url;
    int url_changed = rc == STORE_OK && strcmp(url, row.url) != 0;
    if (rc == STORE_OK && (api_connector_changed_functions(row.functions, fn_text, &changed) != 0 ||
                           !api_built(&changed) ||
                           json_parse(changed.data, changed.len, 2, &changed_doc, NULL) != AL_OK)) {
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK && (url_changed || json_root(changed_doc)->count > 0)) {
        users.name = name;
        users.all = url_changed;
        users.changed = json_root(changed_doc);
        rc = s->ops->version_list_approved(s, api_connector_user, &users);
        rc = rc == STORE_OK && users.failed ? STORE_ERROR : rc;
    }
    if (api_connector_users_settle(ctx, name, force, "this change of", "changed", &users, &revoked,
                                   &rc) != 0) {
        goto out;
    }
    if (rc == STORE_OK) {
        struct store_connector c = {
            name,
            row.department,
            url,
            sealed_secret ? sealed_secret : row.signing_secret_sealed,
            sealed_headers ? sealed_headers : row.headers_sealed,
            p.headers ? names.data : row.header_names,
            fn_text,
            p.timeout ? (int64_t)p.timeout->num : row.timeout_ms,
            NULL,
            NULL,
        };
        rc = s->ops->connector_update(s, &c);
        /* the audit sees what changed: never the secret nor a header value */
        buf_append_str(&details, "{\"department\":");
        api_str(&details, row.department);
        if (p.url) {
            api_member(&details, ",\"url\":", url);
        }
        if (p.timeout) {
            buf_printf(&details, ",\"timeout_ms\":%lld", (long long)c.timeout_ms);
        }
        if (p.headers) {
            buf_printf(&details, ",\"header_names\":%s", names.data);
        }
        if (p.secret) {
            buf_append_str(&details, ",\"signing_secret\":\"changed\"");
        }
        if (p.functions) {
            buf_printf(&details, ",\"functions\":%s", flags.data);
        }
        buf_printf(&details, ",\"functions_changed\":%s,\"revoked\":%s}", changed.data,
                   revoked.data);
    }
    if (rc == STORE_OK) {
        rc = api_built(&details)
                     ? api_audit(ctx, "connector.update", name, row.department, details.data)
                     : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no connector %.64s", name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_connector_revoked(ctx, &users);
        api_reply(ctx, 200);
        if (s->ops->connector_get(s, name, api_connector_one, &ctx->resp->body) == STORE_OK) {
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
    json_doc_free(changed_doc);
    free(users.v);
    api_connector_row_done(&row);
    buf_done(&plain_headers);
    buf_done(&fns);
    buf_done(&flags);
    buf_done(&names);
    buf_done(&changed);
    buf_done(&revoked);
    buf_done(&details);
}

void api_connectors_delete(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    const char *name = api_param(ctx, "c");
    struct api_connector_row row;
    struct api_connector_users users;
    struct buf revoked, details;
    memset(&row, 0, sizeof row);
    memset(&users, 0, sizeof users);
    buf_init(&revoked, (size_t)64 << 10);
    buf_init(&details, (size_t)64 << 10);
    int force = api_force(ctx);
    if (force < 0 || api_body(ctx, NULL, 0) != 0) {
        goto out;
    }
    if (s->ops->tx_begin(s) != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    enum store_rc rc = api_connector_row_get(s, name, &row);
    if (rc == STORE_OK) {
        users.name = name;
        users.all = 1;
        rc = s->ops->version_list_approved(s, api_connector_user, &users);
        rc = rc == STORE_OK && users.failed ? STORE_ERROR : rc;
    }
    if (api_connector_users_settle(ctx, name, force, "deleting", "deleted", &users, &revoked,
                                   &rc) != 0) {
        goto out;
    }
    if (rc == STORE_OK) {
        rc = s->ops->connector_delete(s, name);
    }
    if (rc == STORE_OK) {
        api_member(&details, "{\"department\":", row.department);
        api_member(&details, ",\"url\":", row.url);
        buf_printf(&details, ",\"revoked\":%s}", revoked.data);
        rc = api_built(&details)
                     ? api_audit(ctx, "connector.delete", name, row.department, details.data)
                     : STORE_ERROR;
    }
    rc = api_tx_end(s, rc);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "no connector %.64s", name);
    } else if (rc != STORE_OK) {
        api_store_failed(ctx);
    } else {
        api_connector_revoked(ctx, &users);
        api_reply(ctx, 200);
        api_member(&ctx->resp->body, "{\"name\":", name);
        buf_printf(&ctx->resp->body, ",\"deleted\":true,\"revoked\":%s}\n", revoked.data);
    }
out:
    free(users.v);
    api_connector_row_done(&row);
    buf_done(&revoked);
    buf_done(&details);
}
