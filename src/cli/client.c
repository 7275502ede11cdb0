/*
 * client.c - airlockd over HTTP for the airlock command (client.h). One easy handle per client,
 * so a command making several requests keeps its connection.
 */
#include "client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "term.h"

int client_open(struct client *c, const char *command)
{
    const char *base = getenv("AIRLOCK_URL");
    const char *key = getenv("AIRLOCK_KEY");
    memset(c, 0, sizeof *c);
    if (!base || !base[0] || !key || !key[0]) {
        cli_error("%s needs airlockd's address in AIRLOCK_URL and a key in AIRLOCK_KEY", command);
        return -1;
    }
    size_t blen = strlen(base);
    while (blen && base[blen - 1] == '/') {
        blen--;
    }
    if (blen >= sizeof c->base || strlen(key) > 4096) {
        cli_error("%s: AIRLOCK_URL or AIRLOCK_KEY is too long", command);
        return -1;
    }
    memcpy(c->base, base, blen);
    snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", key);
    c->timeout_s = 30;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(c->curl = curl_easy_init())) {
        cli_error("cannot start libcurl");
        curl_global_cleanup();
        return -1;
    }
    return 0;
}

void client_close(struct client *c)
{
    if (c->curl) {
        curl_easy_cleanup(c->curl);
        c->curl = NULL;
        curl_global_cleanup();
    }
}

/* Where the answer's body goes: `answer`, or while the status is 2xx the stream's sink. */
struct client_out {
    CURL *curl;
    struct buf *answer;
    client_sink_fn *sink;
    void *userdata;
    int sink_failed;
};

static size_t client_write(char *data, size_t size, size_t n, void *userdata)
{
    struct client_out *o = userdata;
    long status = 0;
    if (o->sink) {
        curl_easy_getinfo(o->curl, CURLINFO_RESPONSE_CODE, &status);
    }
    if (o->sink && status >= 200 && status <= 299) {
        if (o->sink(o->userdata, data, size * n) != 0) {
            o->sink_failed = 1;
            return 0;
        }
        return size * n;
    }
    return buf_append(o->answer, data, size * n) == BUF_OK ? size * n : 0;
}

static int client_perform(struct client *c, const char *method, const char *path, const char *body,
                          size_t body_len, struct client_out *o, long *status)
{
    CURL *curl = c->curl;
    struct curl_slist *headers = curl_slist_append(NULL, c->auth);
    struct curl_slist *h2 = headers && body
                                    ? curl_slist_append(headers, "Content-Type: application/json")
                                    : headers;
    char url[4096];
    int rc = -1;
    if (!h2) {
        cli_error("out of memory");
        goto out;
    }
    headers = h2;
    snprintf(url, sizeof url, "%s%s", c->base, path);
    o->curl = curl;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, client_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, o);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, c->timeout_s);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    }
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode cc = curl_easy_perform(curl);
    if (cc != CURLE_OK) {
        if (!o->sink_failed) {
            cli_error("%s: %s", url, curl_easy_strerror(cc));
        }
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    rc = 0;
out:
    curl_slist_free_all(headers);
    return rc;
}

int client_request(struct client *c, const char *method, const char *path, const char *body,
                   size_t body_len, struct buf *answer, long *status)
{
    struct client_out o = { NULL, answer, NULL, NULL, 0 };
    return client_perform(c, method, path, body, body_len, &o, status);
}

int client_stream(struct client *c, const char *path, client_sink_fn *sink, void *userdata,
                  struct buf *answer, long *status)
{
    struct client_out o = { NULL, answer, sink, userdata, 0 };
    return client_perform(c, "GET", path, NULL, 0, &o, status);
}

void client_refused(const char *what, long status, const struct buf *answer)
{
    struct json_doc *doc = NULL;
    const struct json_node *e = NULL;
    if (answer->data && json_parse(answer->data, answer->len, 16, &doc, NULL) == AL_OK) {
        e = json_get(json_root(doc), "error");
    }
    const struct json_node *code = e ? json_get(e, "code") : NULL;
    const struct json_node *msg = e ? json_get(e, "message") : NULL;
    if (code && msg && code->type == JSON_STRING && msg->type == JSON_STRING) {
        /* the server's words, which may quote a guest's or a person's text: through term.c
         * like everything else it sends (cli_error prints its arguments as they are) */
        fprintf(stderr, "airlock: %s: %ld ", what, status);
        term_write(stderr, code->str, code->str_len);
        fputs(": ", stderr);
        term_write(stderr, msg->str, msg->str_len);
        fputc('\n', stderr);
    } else {
        cli_error("%s: HTTP %ld", what, status);
    }
    json_doc_free(doc);
}

int client_segment_ok(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", *p)) {
            return 0;
        }
    }
    return s[0] != '\0' && strlen(s) <= 128;
}
