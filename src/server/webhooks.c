/*
 * webhooks.c - the outbox of events and its delivery thread (webhooks.h).
 *
 * An event is written where it happens, in the same transaction as its cause (a run's end, an
 * approval's decision): one row per subscribed webhook, holding the event's body as it will be
 * sent but for the desk's base URL, which the delivering node puts in front of the link's path.
 * So an event exists exactly when its cause was committed, and a crash between the commit and
 * the send loses nothing: the row is still pending at the restart.
 *
 * Each node runs one delivery thread. It looks at the outbox on a reader every poll_ms (a read
 * of one index, nothing when idle), claims a due delivery through the writer by setting a lease
 * on its row (a conditional UPDATE, so of two nodes only one wins), sends it with libcurl on no
 * transaction and no lock, and records the outcome through the writer: delivered on a 2xx,
 * otherwise the next attempt's time (first retry_first_ms, then doubling up to an hour) until a
 * day has passed since the event, then failed. A node that dies mid-send leaves the lease to run
 * out, and another node (or its restart) sends the event again with the same id: at least once.
 *
 * Hardening as for connector calls (connector.c): http/https only, no redirect followed, no
 * proxy from the environment, the answer discarded unread. The signing secret is opened only
 * for the attempt and cleansed after; the URL and the secret never reach a log line.
 */
#include "webhooks.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "error.h"
#include "hex.h"
#include "json.h"
#include "readers.h"
#include "runs.h"
#include "writer.h"

#define WEBHOOKS_BODY_MAX  ((size_t)1 << 20) /* bytes of an event's body */
#define WEBHOOKS_LEASE_MS  (6 * WEBHOOKS_SEND_TIMEOUT_MS)
#define WEBHOOKS_URL_MAX   2048
#define WEBHOOKS_LINK_HEAD ",\"link\":\""

const char *const webhooks_types[] = { WEBHOOKS_APPROVAL_REQUESTED, WEBHOOKS_APPROVAL_DECIDED,
                                       WEBHOOKS_VERSION_SUBMITTED,  WEBHOOKS_VERSION_APPROVED,
                                       WEBHOOKS_RUN_FAILED,         WEBHOOKS_AUDIT_TRUNCATED };
const size_t webhooks_types_count = sizeof webhooks_types / sizeof webhooks_types[0];

int webhooks_type_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < webhooks_types_count; i++) {
        if (strlen(webhooks_types[i]) == len && memcmp(s, webhooks_types[i], len) == 0) {
            return 1;
        }
    }
    return 0;
}

int64_t webhooks_retry_delay_ms(int64_t first_ms, int64_t attempts)
{
    int64_t delay = first_ms;
    for (int64_t i = 1; i < attempts && delay < WEBHOOKS_RETRY_MAX_MS; i++) {
        delay *= 2;
    }
    return delay < WEBHOOKS_RETRY_MAX_MS ? delay : WEBHOOKS_RETRY_MAX_MS;
}

static void webhooks_time(int64_t ms, char out[32])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char date[24];
    gmtime_r(&secs, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", date, (int)(ms % 1000));
}

enum store_rc webhooks_emit(struct store *s, const char *type, const char *department,
                            const char *link_path, const char *data_json)
{
    char id[RUNS_ID_LEN + 1];
    char when[32];
    struct buf body;
    enum store_rc rc = STORE_ERROR;
    int64_t now = clock_wall_ms();
    buf_init(&body, WEBHOOKS_BODY_MAX);
    if (runs_new_id("evt_", id) != 0) {
        goto out;
    }
    webhooks_time(now, when);
    api_member(&body, "{\"id\":", id);
    api_member(&body, ",\"type\":", type);
    api_member(&body, ",\"time\":", when);
    api_member(&body, ",\"department\":", department);
    buf_printf(&body, ",\"data\":%s", data_json);
    /* last, so that the sending node finds it and puts its public_url in front */
    buf_append_str(&body, ",\"link\":");
    api_str(&body, link_path);
    buf_append_str(&body, "}");
    if (!buf_failed(&body) && body.data) {
        rc = s->ops->webhook_enqueue(s, id, type, department, body.data, now);
    }
out:
    buf_done(&body);
    return rc;
}

/* Emits `type` with data d (a JSON object being built) and the link "/<a>/<b>". */
static enum store_rc webhooks_emit_built(struct store *s, const char *type, const char *department,
                                         struct buf *d, const char *a, const char *b)
{
    char link[2 * STORE_NAME_MAX + 64];
    snprintf(link, sizeof link, "/%s%s%s", a, b ? "/" : "", b ? b : "");
    buf_append_str(d, "}");
    enum store_rc rc = buf_failed(d) || !d->data
                               ? STORE_ERROR
                               : webhooks_emit(s, type, department, link, d->data);
    buf_done(d);
    return rc;
}

enum store_rc webhooks_approval_requested(struct store *s, const char *approval, const char *run,
                                          const char *department, const char *kind,
                                          const char *function)
{
    struct buf d;
    buf_init(&d, 4096);
    api_member(&d, "{\"approval\":", approval);
    api_member(&d, ",\"run\":", run);
    api_member(&d, ",\"kind\":", kind);
    api_member(&d, ",\"function\":", function);
    return webhooks_emit_built(s, WEBHOOKS_APPROVAL_REQUESTED, department, &d, "runs", run);
}

enum store_rc webhooks_approval_decided(struct store *s, const char *approval, const char *run,
                                        const char *department, const char *decision,
                                        const char *by)
{
    struct buf d;
    buf_init(&d, 4096);
    api_member(&d, "{\"approval\":", approval);
    api_member(&d, ",\"run\":", run);
    api_member(&d, ",\"decision\":", decision);
    api_member(&d, ",\"decided_by\":", by);
    return webhooks_emit_built(s, WEBHOOKS_APPROVAL_DECIDED, department, &d, "runs", run);
}

enum store_rc webhooks_version(struct store *s, const char *type, const char *template_name,
                               int64_t version, const char *department, const char *by)
{
    struct buf d;
    char path[STORE_NAME_MAX + 48];
    buf_init(&d, 4096);
    api_member(&d, "{\"template\":", template_name);
    buf_printf(&d, ",\"version\":%" PRId64, version);
    api_member(&d, ",\"by\":", by);
    snprintf(path, sizeof path, "%s/versions/%" PRId64, template_name, version);
    return webhooks_emit_built(s, type, department, &d, "templates", path);
}

enum store_rc webhooks_run_failed(struct store *s, const char *run, const char *department,
                                  const char *template_name, int64_t version, const char *principal)
{
    struct buf d;
    buf_init(&d, 4096);
    api_member(&d, "{\"run\":", run);
    api_member(&d, ",\"template\":", template_name && template_name[0] ? template_name : NULL);
    buf_printf(&d, ",\"version\":%" PRId64, version);
    api_member(&d, ",\"principal\":", principal);
    return webhooks_emit_built(s, WEBHOOKS_RUN_FAILED, department, &d, "runs", run);
}

enum store_rc webhooks_audit_truncated(struct store *s, int64_t seq, const char *reason)
{
    struct buf d;
    buf_init(&d, 4096);
    buf_printf(&d, "{\"first_bad_seq\":%" PRId64, seq);
    api_member(&d, ",\"reason\":", reason);
    return webhooks_emit_built(s, WEBHOOKS_AUDIT_TRUNCATED, NULL, &d, "audit", NULL);
}

/* ---- delivery -------------------------------------------------------------------------------- */

struct webhooks {
    struct writer *writer;
    struct readers *readers;
    char public_url[WEBHOOKS_URL_MAX + 1];
    char node[STORE_NAME_MAX + 1];
    int64_t retry_first_ms;
    int64_t poll_ms;
    struct secretbox_keys *keys;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop; /* under lock; read unlocked by the transfer's progress callback */
};

/* A delivery claimed in a writer job, copied for the send. */
struct webhooks_claim {
    struct webhooks *wh;
    int found;
    int64_t seq;
    int64_t attempts;
    int64_t first_ms;
    char event[RUNS_ID_LEN + 1];
    char webhook[STORE_NAME_MAX + 1];
    char format[8];
    char *url;
    char *body;
    char *secret_sealed;
};

static void webhooks_claim_done(struct webhooks_claim *c)
{
    free(c->url);
    free(c->body);
    free(c->secret_sealed);
}

static int webhooks_claim_copy(void *userdata, const struct store_delivery *d)
{
    struct webhooks_claim *c = userdata;
    c->found = 1;
    c->seq = d->seq;
    c->attempts = d->attempts;
    c->first_ms = d->first_ms;
    snprintf(c->event, sizeof c->event, "%s", d->event);
    snprintf(c->webhook, sizeof c->webhook, "%s", d->webhook.id);
    snprintf(c->format, sizeof c->format, "%s", d->webhook.format);
    c->url = buf_dup(d->webhook.url, strlen(d->webhook.url));
    c->body = buf_dup(d->body, strlen(d->body));
    c->secret_sealed = buf_dup(d->webhook.secret_sealed, strlen(d->webhook.secret_sealed));
    return 0;
}

static enum store_rc webhooks_claim_job(struct writer_tx *tx, void *arg)
{
    struct webhooks_claim *c = arg;
    struct store *s = writer_store(tx);
    enum store_rc rc = s->ops->delivery_claim(s, c->wh->node, clock_wall_ms(), WEBHOOKS_LEASE_MS,
                                              webhooks_claim_copy, c);
    return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

struct webhooks_settle {
    struct webhooks *wh;
    int64_t seq;
    const char *status;
    int64_t next_ms;
    const char *error;
};

static enum store_rc webhooks_settle_job(struct writer_tx *tx, void *arg)
{
    struct webhooks_settle *st = arg;
    struct store *s = writer_store(tx);
    enum store_rc rc =
            s->ops->delivery_settle(s, st->seq, st->wh->node, st->status, st->next_ms, st->error);
    return rc == STORE_NOT_FOUND ? STORE_OK : rc; /* another node holds it now: its outcome */
}

/* curl's write callback: its type says char *, so data cannot be const */
static size_t webhooks_discard(char *data, size_t size, size_t n, void *userdata) /* NOLINT */
{
    (void)data;
    (void)userdata;
    return size * n;
}

static int webhooks_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                             curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    struct webhooks *wh = userdata;
    pthread_mutex_lock(&wh->lock);
    int stop = wh->stop;
    pthread_mutex_unlock(&wh->lock);
    return stop; /* non-zero aborts the transfer */
}

/* The body as sent: the stored event with the link made a URL under public_url; for a Slack
 * webhook, an incoming-webhook message naming the event, with the same link. */
static int webhooks_render(const struct webhooks *wh, const struct webhooks_claim *c,
                           struct buf *out)
{
    struct buf event;
    struct json_doc *doc = NULL;
    int rc = -1;
    buf_init(&event, WEBHOOKS_BODY_MAX + WEBHOOKS_URL_MAX);
    size_t head = strlen(WEBHOOKS_LINK_HEAD);
    const char *at = NULL;
    for (const char *p = strstr(c->body, WEBHOOKS_LINK_HEAD); p;
         p = strstr(p + 1, WEBHOOKS_LINK_HEAD)) {
        at = p; /* the last: the event's own, after its data */
    }
    if (!at) {
        goto out;
    }
    buf_append(&event, c->body, (size_t)(at - c->body) + head);
    buf_append_str(&event, wh->public_url); /* checked as a URL: nothing to escape */
    buf_append_str(&event, at + head);
    if (buf_failed(&event) || !event.data) {
        goto out;
    }
    if (strcmp(c->format, "slack") != 0) {
        buf_append(out, event.data, event.len);
        rc = buf_failed(out) ? -1 : 0;
        goto out;
    }
    if (json_parse(event.data, event.len, 64, &doc, NULL) != AL_OK) {
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *type = json_get(root, "type");
    const struct json_node *dept = json_get(root, "department");
    const struct json_node *link = json_get(root, "link");
    if (!type || type->type != JSON_STRING || !link || link->type != JSON_STRING) {
        goto out;
    }
    struct buf text;
    buf_init(&text, WEBHOOKS_URL_MAX + 256);
    buf_printf(&text, "airlock: %s", type->str);
    if (dept && dept->type == JSON_STRING) {
        buf_printf(&text, " in %s", dept->str);
    }
    /* Slack's link markup: <url|label>; the URL has no '|' or '>' (a checked URL) */
    buf_printf(&text, " - <%s|open on the desk>", link->str);
    buf_append_str(out, "{\"text\":");
    if (!buf_failed(&text) && text.data) {
        json_write_string(out, text.data, text.len);
    }
    buf_append_str(out, "}");
    rc = buf_failed(&text) || buf_failed(out) ? -1 : 0;
    buf_done(&text);
out:
    json_doc_free(doc);
    buf_done(&event);
    return rc;
}

/* One attempt: 0 when the receiver answered 2xx; otherwise -1 with why in `why`. */
static int webhooks_send(struct webhooks *wh, const struct webhooks_claim *c, char *why,
                         size_t why_size)
{
    struct buf body;
    struct buf signed_text;
    struct curl_slist *headers = NULL;
    CURL *e = NULL;
    char *secret = NULL;
    size_t secret_len = 0;
    char context[STORE_NAME_MAX + 64];
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char mac_hex[2 * EVP_MAX_MD_SIZE + 1];
    char sig[64 + 2 * EVP_MAX_MD_SIZE];
    char event_header[64 + RUNS_ID_LEN];
    char stamp[32];
    int rc = -1;
    buf_init(&body, WEBHOOKS_BODY_MAX + WEBHOOKS_URL_MAX);
    buf_init(&signed_text, WEBHOOKS_BODY_MAX + WEBHOOKS_URL_MAX + 32);
    snprintf(why, why_size, "out of memory");
    if (webhooks_render(wh, c, &body) != 0) {
        snprintf(why, why_size, "the event's body cannot be made");
        goto out;
    }
    snprintf(context, sizeof context, "webhook/%s/signing_secret", c->webhook);
    if (secretbox_keys_open(wh->keys, context, c->secret_sealed, &secret, &secret_len) != 0) {
        snprintf(why, why_size, "its signing secret does not open with this node's secret key");
        goto out;
    }
    /* the signature of a connector call: HMAC-SHA-256 over "timestamp.body" */
    snprintf(stamp, sizeof stamp, "%lld", (long long)time(NULL));
    if (buf_printf(&signed_text, "%s.", stamp) != BUF_OK ||
        buf_append(&signed_text, body.data, body.len) != BUF_OK ||
        !HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)signed_text.data,
              signed_text.len, mac, &mac_len)) {
        goto out;
    }
    hex_encode(mac, mac_len, mac_hex);
    snprintf(sig, sizeof sig, "X-Airlock-Signature: t=%s,v1=%s", stamp, mac_hex);
    snprintf(event_header, sizeof event_header, "X-Airlock-Event-Id: %s", c->event);
    const char *own[] = { "Content-Type: application/json", "Expect:", event_header, sig };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        struct curl_slist *l = curl_slist_append(headers, own[i]);
        if (!l) {
            goto out;
        }
        headers = l;
    }
    e = curl_easy_init();
    if (!e) {
        goto out;
    }
    int bad = 0;
    bad |= curl_easy_setopt(e, CURLOPT_URL, c->url) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)WEBHOOKS_SEND_TIMEOUT_MS) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, webhooks_discard) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, webhooks_progress) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_XFERINFODATA, wh) != CURLE_OK;
    if (bad) {
        snprintf(why, why_size, "libcurl refused an option");
        goto out;
    }
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        snprintf(why, why_size, "%s", curl_easy_strerror(cc));
    } else if (status < 200 || status > 299) {
        snprintf(why, why_size, "the receiver answered %ld", status);
    } else {
        rc = 0;
    }
out:
    if (secret) {
        OPENSSL_cleanse(secret, secret_len);
    }
    free(secret);
    if (signed_text.data) {
        OPENSSL_cleanse(signed_text.data, signed_text.len);
    }
    buf_done(&signed_text);
    buf_done(&body);
    curl_slist_free_all(headers);
    curl_easy_cleanup(e);
    return rc;
}

/* Claims and sends one due delivery: 1 when one was there, 0 when none, -1 on a store failure. */
static int webhooks_deliver_one(struct webhooks *wh)
{
    struct webhooks_claim c;
    char why[256];
    memset(&c, 0, sizeof c);
    c.wh = wh;
    enum store_rc rc = writer_call(wh->writer, webhooks_claim_job, &c);
    if (rc != STORE_OK || !c.found) {
        webhooks_claim_done(&c);
        return rc == STORE_OK ? 0 : -1;
    }
    struct webhooks_settle st = { wh, c.seq, "delivered", 0, NULL };
    if (!c.url || !c.body || !c.secret_sealed) {
        snprintf(why, sizeof why, "out of memory");
    }
    if (c.url && c.body && c.secret_sealed && webhooks_send(wh, &c, why, sizeof why) == 0) {
        st.status = "delivered";
    } else {
        int64_t now = clock_wall_ms();
        st.next_ms = now + webhooks_retry_delay_ms(wh->retry_first_ms, c.attempts);
        st.status = st.next_ms - c.first_ms > WEBHOOKS_GIVE_UP_MS ? "failed" : "pending";
        st.error = why;
        /* the webhook's id, never its URL (it may hold a credential, as Slack's do) */
        fprintf(stderr, "airlockd: webhook %s: event %s: attempt %" PRId64 " failed: %s%s\n",
                c.webhook, c.event, c.attempts, why,
                strcmp(st.status, "failed") == 0 ? "; given up after a day" : "");
    }
    rc = writer_call(wh->writer, webhooks_settle_job, &st);
    webhooks_claim_done(&c);
    return rc == STORE_OK ? 1 : -1;
}

static void *webhooks_main(void *arg)
{
    struct webhooks *wh = arg;
    for (;;) {
        int64_t at = -1;
        struct store *s = readers_take(wh->readers);
        enum store_rc rc = s ? s->ops->delivery_next(s, &at) : STORE_ERROR;
        if (s) {
            readers_give(wh->readers, s);
        }
        int64_t now = clock_wall_ms();
        int64_t wait = wh->poll_ms;
        if (rc == STORE_OK && at <= now) {
            int sent = webhooks_deliver_one(wh);
            wait = sent == 1 ? 0 : wh->poll_ms;
        } else if (rc == STORE_OK && at - now < wait) {
            wait = at - now;
        }
        pthread_mutex_lock(&wh->lock);
        if (!wh->stop && wait > 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += (time_t)(wait / 1000);
            until.tv_nsec += (long)(wait % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&wh->cond, &wh->lock, &until);
        }
        int stop = wh->stop;
        pthread_mutex_unlock(&wh->lock);
        if (stop) {
            break;
        }
    }
    return NULL;
}

int webhooks_start(struct writer *w, struct readers *r, const struct webhooks_options *o,
                   struct webhooks **ret, struct al_error *reterr)
{
    struct webhooks *wh = calloc(1, sizeof *wh);
    if (!wh) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    wh->writer = w;
    wh->readers = r;
    snprintf(wh->public_url, sizeof wh->public_url, "%s", o->public_url);
    snprintf(wh->node, sizeof wh->node, "%s", o->node ? o->node : "");
    wh->retry_first_ms = o->retry_first_ms > 0 ? o->retry_first_ms : WEBHOOKS_RETRY_FIRST_MS;
    wh->poll_ms = o->poll_ms > 0 ? o->poll_ms : 1000;
    wh->keys = o->secret_keys;
    pthread_mutex_init(&wh->lock, NULL);
    pthread_cond_init(&wh->cond, NULL);
    if (pthread_create(&wh->thread, NULL, webhooks_main, wh) != 0) {
        webhooks_stop(wh);
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the webhook delivery thread");
        return -1;
    }
    wh->started = 1;
    *ret = wh;
    return 0;
}

void webhooks_stop(struct webhooks *wh)
{
    if (!wh) {
        return;
    }
    if (wh->started) {
        pthread_mutex_lock(&wh->lock);
        wh->stop = 1;
        pthread_cond_signal(&wh->cond);
        pthread_mutex_unlock(&wh->lock);
        pthread_join(wh->thread, NULL);
    }
    pthread_mutex_destroy(&wh->lock);
    pthread_cond_destroy(&wh->cond);
    free(wh);
}
