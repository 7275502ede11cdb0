/*
 * cmd_types.c - `airlock types TEMPLATE [VERSION]`: the TypeScript declarations of a template
 * version's host functions and input, from airlockd (GET /v1/templates/{t}/versions/{v}/types),
 * to paste into a model's prompt or check a template with tsc (docs/typescript.md). airlockd is
 * AIRLOCK_URL, the caller AIRLOCK_KEY. Without VERSION: the newest approved version.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

#define TYPES_ANSWER_MAX ((size_t)8 << 20)

static const char types_usage[] =
        "usage: airlock types TEMPLATE [VERSION]\n"
        "  prints the TypeScript declarations of the version's host functions, console and\n"
        "  input (default: the newest approved version), from airlockd at $AIRLOCK_URL with\n"
        "  the key $AIRLOCK_KEY\n"
        "exit status: 0 printed, 1 airlockd refused or could not be reached, 2 usage\n";

static size_t types_write(char *data, size_t size, size_t n, void *userdata)
{
    struct buf *b = userdata;
    return buf_append(b, data, size * n) == BUF_OK ? size * n : 0;
}

/* GET url with the key; the answer's body into `body`, its status into *status. 0, or -1 with
 * a message printed. */
static int types_get(const char *url, const char *key, struct buf *body, long *status)
{
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = NULL;
    char auth[4200];
    int rc = -1;
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    headers = curl ? curl_slist_append(NULL, auth) : NULL;
    if (!curl || !headers) {
        cli_error("out of memory");
        goto out;
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, types_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    CURLcode cc = curl_easy_perform(curl);
    if (cc != CURLE_OK) {
        cli_error("%s: %s", url, curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    rc = 0;
out:
    curl_slist_free_all(headers);
    if (curl) {
        curl_easy_cleanup(curl);
    }
    return rc;
}

/* An error answer's message, or the status. */
static void types_refused(const char *what, long status, const struct buf *body)
{
    struct json_doc *doc = NULL;
    const struct json_node *e = NULL;
    if (body->data && json_parse(body->data, body->len, 16, &doc, NULL) == AL_OK) {
        e = json_get(json_root(doc), "error");
    }
    const struct json_node *code = e ? json_get(e, "code") : NULL;
    const struct json_node *msg = e ? json_get(e, "message") : NULL;
    if (code && msg && code->type == JSON_STRING && msg->type == JSON_STRING) {
        cli_error("%s: %ld %s: %s", what, status, code->str, msg->str);
    } else {
        cli_error("%s: HTTP %ld", what, status);
    }
    json_doc_free(doc);
}

/* The newest approved version of the template's answer (GET /v1/templates/{t}); 0 when none. */
static long long types_newest_approved(const struct buf *body)
{
    struct json_doc *doc = NULL;
    long long best = 0;
    if (json_parse(body->data, body->len, 64, &doc, NULL) != AL_OK) {
        return 0;
    }
    const struct json_node *versions = json_get(json_root(doc), "versions");
    for (const struct json_node *v = versions && versions->type == JSON_ARRAY ? versions->child
                                                                              : NULL;
         v; v = v->next) {
        const struct json_node *n = json_get(v, "version");
        const struct json_node *st = json_get(v, "state");
        if (n && st && n->type == JSON_NUMBER && st->type == JSON_STRING &&
            strcmp(st->str, "approved") == 0 && n->num > (double)best) {
            best = (long long)n->num;
        }
    }
    json_doc_free(doc);
    return best;
}

/* A path segment: only what a template name may hold passes unescaped. */
static int types_segment_ok(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", *p)) {
            return 0;
        }
    }
    return s[0] != '\0' && strlen(s) <= 128;
}

int cmd_types(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(types_usage, stdout);
        return 0;
    }
    if (argc < 2 || argc > 3) {
        fputs(types_usage, stderr);
        return 2;
    }
    const char *base = getenv("AIRLOCK_URL");
    const char *key = getenv("AIRLOCK_KEY");
    if (!base || !base[0] || !key || !key[0]) {
        cli_error("types needs airlockd's address in AIRLOCK_URL and a key in AIRLOCK_KEY");
        return 2;
    }
    const char *tpl = argv[1];
    char *end = NULL;
    long long version = argc == 3 ? strtoll(argv[2], &end, 10) : 0;
    if (!types_segment_ok(tpl) || (argc == 3 && (*argv[2] == '\0' || *end || version < 1))) {
        cli_error("types: TEMPLATE is a template's name and VERSION a number from 1");
        return 2;
    }
    size_t blen = strlen(base);
    while (blen && base[blen - 1] == '/') {
        blen--;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cli_error("cannot start libcurl");
        return 1;
    }
    char url[4096];
    struct buf body;
    long status = 0;
    int rc = 1;
    buf_init(&body, TYPES_ANSWER_MAX);
    if (!version) {
        snprintf(url, sizeof url, "%.*s/v1/templates/%s", (int)blen, base, tpl);
        if (types_get(url, key, &body, &status) != 0) {
            goto out;
        }
        if (status != 200) {
            types_refused(tpl, status, &body);
            goto out;
        }
        version = types_newest_approved(&body);
        if (!version) {
            cli_error("types: template %s has no approved version", tpl);
            goto out;
        }
        buf_reset(&body);
    }
    snprintf(url, sizeof url, "%.*s/v1/templates/%s/versions/%lld/types", (int)blen, base, tpl,
             version);
    if (types_get(url, key, &body, &status) != 0) {
        goto out;
    }
    if (status != 200 || !body.data) {
        types_refused(tpl, status, &body);
        goto out;
    }
    fwrite(body.data, 1, body.len, stdout);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    buf_done(&body);
    curl_global_cleanup();
    return rc;
}
