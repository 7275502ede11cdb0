/*
 * http.c - libmicrohttpd behind http.h. MHD serves connections from a pool of threads (its own
 * epoll in each); a request's state is made on the first call of the access handler, which is
 * MHD's call once the headers are in and before any body byte is read: the framing is checked
 * and `admit` decides there. A request refused there is answered at once - MHD's "early
 * response": its body is never read, the connection is closed after the answer and lingers a
 * little (http_linger). A refusal being recorded suspends the request there and is answered the
 * same way once resumed. Otherwise, within the budget of all bodies, the body is collected into
 * a capped buffer (past the cap it is read and dropped, for the 413 of a chunked body) and the
 * handler is called once it is in.
 *
 * MHD has connection limits (all, per address) and an idle timeout, but no deadline that a
 * client sending one byte every few seconds cannot stretch. So every connection is tracked
 * (MHD's connection notifications): which phase it is in - waiting for headers, for a body, or
 * busy (being handled, waiting for its answer, sending it) - and since when; a reaper thread
 * shuts down the socket of one that overstays its phase, and MHD then closes it. MHD notifies
 * the close before it closes the descriptor, under the same lock the reaper holds, so the
 * reaper never touches a descriptor that was reused.
 *
 * The log line is written here, once per request, when the answer is queued (for a streamed
 * body, before its first byte), because only here are both the request and its final status
 * known.
 *
 * HTTPS: MHD cannot change the certificate of a running daemon, and GnuTLS keeps pointers to the
 * certificate and key a session was given until the session ends. So the pair is handed out by
 * a certificate callback (MHD_OPTION_HTTPS_CERT_CALLBACK) from a counted pair that a reload swaps
 * under tls_lock: each connection's track holds a reference to the pair its handshake took until
 * MHD notifies its close, and the pair in use holds one; the last reference frees it.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"
#include "json.h"
#include "metrics.h"

#define HTTP_ANSWER_MAX    ((size_t)96 << 20) /* bytes of one answer's body */
#define HTTP_TLS_FILE_MAX  ((size_t)1 << 20)  /* bytes of a certificate or key file */
#define HTTP_TLS_CHAIN_MAX 16                 /* certificates in the chain file */

/* A certificate chain and its private key, as GnuTLS takes them in a handshake. */
struct http_tls_pair {
    unsigned refs; /* (tls_lock) the server's while in use, and one per connection that took it */
    unsigned n;    /* certificates in pcert, the server's own first */
    gnutls_pcert_st pcert[HTTP_TLS_CHAIN_MAX];
    gnutls_privkey_t key;
    char until[32]; /* the server certificate's end of validity, "YYYY-MM-DD HH:MM UTC" */
    int expired;    /* already past it when read */
};

enum http_phase {
    HTTP_PHASE_HEADERS = 0, /* waiting for a request's headers */
    HTTP_PHASE_BODY,        /* admitted, waiting for its body */
    HTTP_PHASE_BUSY,        /* handled, waiting for its answer, or sending it: no deadline */
    HTTP_PHASE_CLOSING,     /* shut down here: MHD closes it */
};

/* One connection, for the deadlines and the limit per address (MHD's socket context). */
struct http_track {
    int fd;
    enum http_phase phase;
    int64_t since_ms;             /* monotonic */
    char client[HTTP_CLIENT_MAX]; /* its address, as http_client names it */
    int linger;                   /* answered before its body was read: see http_linger */
    struct http_server *srv;
    struct http_tls_pair *tls; /* (srv->tls_lock) the pair its handshake took: a reference */
    struct http_track *prev;
    struct http_track *next;
};

/* A closed connection whose body was never read, kept open a little to drop what still comes
 * (http_linger). */
struct http_lingering {
    int fd; /* our duplicate of the socket */
    int64_t until_ms;
    size_t left; /* bytes it may still send */
    struct http_lingering *next;
};

struct http_server {
    struct MHD_Daemon *daemon;
    atomic_int inflight; /* requests begun and not yet completed */
    int quiesced;        /* (lock) stopping: connections accepted now are closed */
    struct http_options o;
    int fd;
    pthread_mutex_t lock; /* tracks, budget_used, stop */
    pthread_cond_t cond;  /* the reaper waits on it */
    struct http_track *tracks;
    struct http_lingering *lingering;
    size_t budget_used; /* body bytes reserved by requests receiving or holding a body */
    int stop;
    pthread_t reaper;
    int reaping;
    pthread_mutex_t tls_lock;       /* tls_pair and every pair's refs */
    struct http_tls_pair *tls_pair; /* HTTPS: the pair new handshakes take; NULL: plain HTTP */
};

enum http_deferred_state {
    HTTP_DEFERRED_WAITING = 0,
    HTTP_DEFERRED_ANSWERED, /* the answer is in resp: the request thread sends it */
    HTTP_DEFERRED_ORPHANED, /* the connection went first: the answerer frees what is left */
};

struct http_deferred {
    struct MHD_Connection *conn;
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    /* the answer: written by the answering thread before MHD_resume_connection, whose lock
     * orders the writes before the request thread reads them */
    struct http_response resp;
    /* Whichever of the answer and the connection's end comes second frees (a stop that gives
     * up on a request still waiting for the writer must not free what the writer's job uses):
     * an orphaned deferral keeps the request's app, freed by the answerer. */
    atomic_int state;
    void *app;
    void (*app_free)(void *app);
};

struct http_conn {
    struct http_server *srv;
    struct http_request req;
    struct buf body;
    struct timespec start;
    struct http_track *track;
    size_t reserved;                /* bytes of the body budget this request holds */
    int early;                      /* answered from its headers: its body is never read */
    struct http_deferred *deferred; /* while the answer is awaited, and until it is sent */
};

static int64_t http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void http_set_phase(struct http_server *srv, struct http_track *t, enum http_phase phase)
{
    if (!t) {
        return;
    }
    pthread_mutex_lock(&srv->lock);
    if (t->phase != HTTP_PHASE_CLOSING) {
        t->phase = phase;
        t->since_ms = http_now_ms();
    }
    pthread_mutex_unlock(&srv->lock);
}

static void http_request_id(char *out)
{
    unsigned char raw[8] = { 0 };
    if (RAND_bytes(raw, sizeof raw) != 1) {
        /* Only a label for logs: the clock is as good as anything when the generator fails. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        memcpy(raw, &ts.tv_nsec, sizeof raw < sizeof ts.tv_nsec ? sizeof raw : sizeof ts.tv_nsec);
    }
    memcpy(out, "req_", 4);
    hex_encode(raw, sizeof raw, out + 4);
}

static void http_log(const struct http_conn *c, const struct http_response *resp)
{
    struct timespec now;
    struct buf line;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - c->start.tv_sec) * 1e3 +
                (double)(now.tv_nsec - c->start.tv_nsec) / 1e6;
    buf_init(&line, 16 * 1024); /* a 512-byte path escaped six times over fits */
    buf_printf(&line, "{\"log\":\"request\",\"request_id\":\"%s\",\"method\":", c->req.request_id);
    json_write_string(&line, c->req.method, strlen(c->req.method));
    buf_append_str(&line, ",\"path\":");
    json_write_string(&line, c->req.path, strnlen(c->req.path, 512));
    buf_append_str(&line, ",\"route\":");
    json_write_string(&line, resp->route, strlen(resp->route));
    buf_printf(&line, ",\"status\":%u,\"principal\":", resp->status);
    json_write_string(&line, resp->actor, strlen(resp->actor));
    buf_printf(&line, ",\"bytes_in\":%zu,\"duration_ms\":%.3f}\n", c->req.body_len, ms);
    if (line.data) {
        fputs(line.data, stderr);
    }
    buf_done(&line);
}

/* The rate limit key of the peer: IPv4 as is, IPv6 by its /64 (an IPv4-mapped one as IPv4). */
static void http_client(struct MHD_Connection *conn, char *out)
{
    const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char text[INET6_ADDRSTRLEN] = "";
    out[0] = '\0';
    if (!info || !info->client_addr) {
        return;
    }
    if (info->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)info->client_addr;
        inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
        snprintf(out, HTTP_CLIENT_MAX, "ip4:%s", text);
    } else if (info->client_addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)info->client_addr;
        struct in6_addr net = sin6->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&net)) {
            inet_ntop(AF_INET, &net.s6_addr[12], text, sizeof text);
            snprintf(out, HTTP_CLIENT_MAX, "ip4:%s", text);
            return;
        }
        memset(&net.s6_addr[8], 0, 8);
        inet_ntop(AF_INET6, &net, text, sizeof text);
        snprintf(out, HTTP_CLIENT_MAX, "ip6:%s/64", text);
    }
}

/* A streamed body as MHD sees it: the handler's callbacks and their data. */
struct http_stream {
    http_stream_fn *fn;
    http_stream_free_fn *free_fn;
    void *userdata;
};

static ssize_t http_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct http_stream *st = cls;
    (void)pos;
    ssize_t n = st->fn(st->userdata, out, max);
    if (n == HTTP_STREAM_END) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (n <= 0 || (size_t)n > max) {
        /* 0 would have MHD poll again at once: a callback with nothing to say has failed */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return n;
}

static void http_stream_release(void *cls)
{
    struct http_stream *st = cls;
    if (st->free_fn) {
        st->free_fn(st->userdata);
    }
    free(st);
}

void http_stream(struct http_response *resp, http_stream_fn *fn, http_stream_free_fn *free_fn,
                 void *userdata)
{
    resp->stream_fn = fn;
    resp->stream_free = free_fn;
    resp->stream_data = userdata;
}

static void http_error(struct http_response *resp, const char *request_id, unsigned status,
                       const char *code, const char *message)
{
    resp->status = status;
    resp->content_type = "application/json";
    buf_reset(&resp->body);
    buf_append_str(&resp->body, "{\"error\":{\"code\":\"");
    buf_append_str(&resp->body, code);
    buf_append_str(&resp->body, "\",\"message\":");
    json_write_string(&resp->body, message, strlen(message));
    buf_printf(&resp->body, ",\"request_id\":\"%s\"}}\n", request_id);
}

/* The answer in resp's body, unless an append to it failed: then a 500 with the error body
 * (a document cut short never goes out as a success). */
static void http_whole_or_500(struct http_response *resp, const char *request_id)
{
    if (resp->stream_fn || !buf_failed(&resp->body)) {
        return;
    }
    resp->etag = NULL;
    resp->headers = NULL;
    http_error(resp, request_id, 500, "INTERNAL",
               "the answer could not be built (too large, or out of memory)");
}

/* The MHD response of resp: its buffer copied, or its stream (handed over to MHD, which frees
 * it through http_stream_release; left in resp, which frees it, when there is no memory). */
static struct MHD_Response *http_response_new(struct http_response *resp)
{
    if (!resp->stream_fn) {
        return MHD_create_response_from_buffer(resp->body.len, resp->body.data,
                                               MHD_RESPMEM_MUST_COPY);
    }
    struct http_stream *st = calloc(1, sizeof *st);
    struct MHD_Response *r = NULL;
    if (!st) {
        return NULL;
    }
    st->fn = resp->stream_fn;
    st->free_fn = resp->stream_free;
    st->userdata = resp->stream_data;
    resp->stream_fn = NULL; /* MHD's now */
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, http_stream_read, st,
                                          http_stream_release);
    if (!r) {
        http_stream_release(st);
    }
    return r;
}

/* Queues resp on the connection and writes the log line. */
static enum MHD_Result http_queue(struct MHD_Connection *conn, struct http_conn *c,
                                  struct http_response *resp)
{
    enum MHD_Result ret = MHD_NO;
    http_whole_or_500(resp, c->req.request_id);
    struct MHD_Response *r = http_response_new(resp);
    if (!r) {
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            resp->content_type ? resp->content_type : "application/json");
    MHD_add_response_header(r, "X-Request-Id", c->req.request_id);
    if (resp->allow[0]) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, resp->allow);
    }
    if (resp->etag) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, resp->etag);
    }
    for (const char *const *h = resp->headers; h && h[0] && h[1]; h += 2) {
        MHD_add_response_header(r, h[0], h[1]);
    }
    if (resp->location[0]) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, resp->location);
    }
    for (size_t i = 0; i < HTTP_COOKIES_MAX; i++) {
        if (resp->set_cookie[i][0]) {
            MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, resp->set_cookie[i]);
        }
    }
    if (resp->retry_after_s > 0) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u", resp->retry_after_s);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    }
    if (resp->close) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    ret = MHD_queue_response(conn, resp->status, r);
    MHD_destroy_response(r);
    http_log(c, resp);
    /* counted with the log line: both see every answered request, under the same route */
    metrics_http_request(resp->route, resp->status);
    return ret;
}

void http_response_init(struct http_response *resp)
{
    memset(resp, 0, sizeof *resp);
    buf_init(&resp->body, HTTP_ANSWER_MAX);
}

void http_response_done(struct http_response *resp)
{
    if (resp->stream_fn && resp->stream_free) {
        resp->stream_free(resp->stream_data);
    }
    resp->stream_fn = NULL;
    buf_done(&resp->body);
}

void http_response_move(struct http_response *dst, struct http_response *src)
{
    http_response_done(dst);
    *dst = *src;
    buf_init(&src->body, src->body.max);
    src->stream_fn = NULL;
    src->stream_free = NULL;
    src->stream_data = NULL;
}

struct http_deferred *http_defer(const struct http_request *req, struct http_response *resp)
{
    struct MHD_Connection *conn = req->conn;
    if (!conn) {
        return NULL;
    }
    /* every request handed to a handler is the req member of its http_conn */
    struct http_conn *hc = (struct http_conn *)((char *)req - offsetof(struct http_conn, req));
    struct http_deferred *d = calloc(1, sizeof *d);
    if (!d) {
        return NULL;
    }
    d->conn = conn;
    snprintf(d->request_id, sizeof d->request_id, "%s", req->request_id);
    http_response_init(&d->resp);
    /* the log line's fields, known by now (the router sets them before the handler) */
    snprintf(d->resp.actor, sizeof d->resp.actor, "%s", resp->actor);
    snprintf(d->resp.route, sizeof d->resp.route, "%s", resp->route);
    d->resp.reshape = resp->reshape;
    d->resp.reshape_data = resp->reshape_data;
    d->resp.reshape_free = resp->reshape_free;
    resp->reshape = NULL;
    resp->reshape_data = NULL;
    resp->reshape_free = NULL;
    hc->deferred = d;
    resp->deferred = 1;
    http_set_phase(hc->srv, hc->track, HTTP_PHASE_BUSY);
    /* suspended before the handle can reach another thread: a resume never precedes it */
    MHD_suspend_connection(conn);
    return d;
}

const char *http_deferred_request_id(const struct http_deferred *d)
{
    return d ? d->request_id : "";
}

static void http_deferred_free(struct http_deferred *d)
{
    if (d->resp.reshape_free) {
        d->resp.reshape_free(d->resp.reshape_data);
    }
    http_response_done(&d->resp);
    free(d);
}

/* Sends the answer in d->resp, or frees it all when the connection has gone meanwhile. */
static void http_deferred_send(struct http_deferred *d)
{
    int waiting = HTTP_DEFERRED_WAITING;
    if (atomic_compare_exchange_strong(&d->state, &waiting, HTTP_DEFERRED_ANSWERED)) {
        MHD_resume_connection(d->conn);
        return;
    }
    if (d->app_free) {
        d->app_free(d->app);
    }
    http_deferred_free(d);
}

void http_deferred_reply(struct http_deferred *d, struct http_response *resp)
{
    struct http_response *to = &d->resp;
    struct http_response kept = *to; /* its body is gone with the move: only its fields are read */
    http_response_move(to, resp);
    if (!to->actor[0]) {
        memcpy(to->actor, kept.actor, sizeof to->actor);
    }
    if (!to->route[0]) {
        memcpy(to->route, kept.route, sizeof to->route);
    }
    /* the deferral's reshape stays (it was taken from the handler's response) */
    to->reshape = kept.reshape;
    to->reshape_data = kept.reshape_data;
    to->reshape_free = kept.reshape_free;
    http_deferred_send(d);
}

void http_deferred_answer(struct http_deferred *d, unsigned status, const char *json, size_t len)
{
    d->resp.status = status;
    d->resp.content_type = "application/json";
    buf_reset(&d->resp.body);
    buf_append(&d->resp.body, json, len); /* a failure is answered 500 when it is queued */
    http_deferred_send(d);
}

const char *http_query(const struct http_request *req, const char *name)
{
    return req->conn ? MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

const char *http_header(const struct http_request *req, const char *name)
{
    return req->conn ? MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name) : NULL;
}

/* Counts what decides how a body is framed. */
struct http_framing {
    int content_length;
    int transfer_encoding;
    int chunked;
};

static enum MHD_Result http_frame_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value)
{
    struct http_framing *f = cls;
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->content_length++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->transfer_encoding++;
        f->chunked += value && strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

/* Only one way to tell where a body ends: two would let a request be smuggled behind another
 * (a proxy and airlockd reading different bodies). */
static const char *http_framing_error(struct MHD_Connection *conn)
{
    struct http_framing f = { 0, 0, 0 };
    MHD_get_connection_values(conn, MHD_HEADER_KIND, http_frame_header, &f);
    if (f.content_length > 1) {
        return "more than one Content-Length header";
    }
    if (f.transfer_encoding && f.content_length) {
        return "both Content-Length and Transfer-Encoding";
    }
    if (f.transfer_encoding > 1 || (f.transfer_encoding && !f.chunked)) {
        return "a Transfer-Encoding other than chunked";
    }
    return NULL;
}

/* Reserves room for the body in the budget of all bodies: its declared length, or the cap for
 * one of unknown length (chunked). 0 when it fits. */
static int http_reserve(struct http_server *srv, struct http_conn *c)
{
    size_t want = c->req.body_limit_bytes ? c->req.body_limit_bytes : srv->o.body_limit_bytes;
    if (c->req.has_content_length && c->req.content_length < want) {
        want = (size_t)c->req.content_length;
    }
    if (want == 0) {
        return 0;
    }
    pthread_mutex_lock(&srv->lock);
    int fits = srv->budget_used + want <= srv->o.body_budget_bytes;
    if (fits) {
        srv->budget_used += want;
        c->reserved = want;
    }
    pthread_mutex_unlock(&srv->lock);
    return fits ? 0 : -1;
}

/* Keeps `keep` bytes of the request's reservation and gives the rest back. */
static void http_release(struct http_server *srv, struct http_conn *c, size_t keep)
{
    if (c->reserved <= keep) {
        return;
    }
    pthread_mutex_lock(&srv->lock);
    srv->budget_used -= c->reserved - keep;
    c->reserved = keep;
    pthread_mutex_unlock(&srv->lock);
}

/* An answer given from the headers alone (MHD's "early response"): the body is never read and
 * the connection closes after the answer; one that was to come with a body lingers there (see
 * http_linger), so that a client that sends all of it before it reads gets the answer. */
static enum MHD_Result http_early(struct MHD_Connection *conn, struct http_conn *c,
                                  struct http_response *resp)
{
    /* a body comes with a declared length above 0, or in chunks */
    int body = c->req.has_content_length
                       ? c->req.content_length > 0
                       : MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    resp->close = 1;
    if (c->track && body) {
        pthread_mutex_lock(&c->srv->lock);
        c->track->linger = 1;
        pthread_mutex_unlock(&c->srv->lock);
    }
    return http_queue(conn, c, resp);
}

/* The first call: a request's headers are in, its body not read yet. */
static enum MHD_Result http_begin(struct http_server *srv, struct MHD_Connection *conn,
                                  const char *url, const char *method, void **con_cls)
{
    struct http_conn *c = calloc(1, sizeof *c);
    struct http_response resp;
    enum MHD_Result ret = MHD_YES;
    if (!c) {
        return MHD_NO;
    }
    c->srv = srv;
    clock_gettime(CLOCK_MONOTONIC, &c->start);
    buf_init(&c->body, srv->o.body_limit_bytes);
    c->req.method = method;
    c->req.path = url;
    c->req.body = "";
    c->req.authorization =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *length =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length) {
        /* MHD has answered a malformed one itself */
        c->req.has_content_length = 1;
        c->req.content_length = strtoull(length, NULL, 10);
    }
    http_request_id(c->req.request_id);
    http_client(conn, c->req.client);
    c->req.tls = http_tls(srv);
    c->req.conn = conn;
    const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    c->track = info ? info->socket_context : NULL;
    *con_cls = c;
    atomic_fetch_add(&srv->inflight, 1);
    http_set_phase(srv, c->track, HTTP_PHASE_BUSY);
    c->early = 1;

    http_response_init(&resp);
    const char *framing = http_framing_error(conn);
    if (framing) {
        http_error(&resp, c->req.request_id, 400, "INVALID_REQUEST", framing);
    } else {
        srv->o.admit(srv->o.userdata, &c->req, &resp);
    }
    if (resp.deferred) {
        goto out; /* suspended (a refusal being recorded): answered early once resumed */
    }
    if (resp.status == 0 && c->req.body_limit_bytes) {
        /* the route takes another cap (nothing of the body is read yet) */
        buf_done(&c->body);
        buf_init(&c->body, c->req.body_limit_bytes);
    }
    if (resp.status == 0 && http_reserve(srv, c) != 0) {
        http_error(&resp, c->req.request_id, 429, "RATE_LIMITED",
                   "too many request bodies are being received at once: retry later");
        resp.retry_after_s = 1;
    }
    if (resp.status != 0) {
        ret = http_early(conn, c, &resp);
        goto out;
    }
    c->early = 0;
    http_set_phase(srv, c->track, HTTP_PHASE_BODY);
out:
    http_response_done(&resp);
    return ret;
}

/* The body is in (or dropped past the cap): the handler answers, now or later. */
static enum MHD_Result http_answer(struct http_server *srv, struct MHD_Connection *conn,
                                   struct http_conn *c)
{
    struct http_response resp;
    enum MHD_Result ret = MHD_NO;
    http_response_init(&resp);
    http_set_phase(srv, c->track, HTTP_PHASE_BUSY);
    http_release(srv, c, c->body.len);
    resp.status = 500;
    c->req.body = c->body.data ? c->body.data : "";
    c->req.body_len = c->body.len;
    srv->o.handler(srv->o.userdata, &c->req, &resp);
    if (resp.deferred && c->deferred) {
        /* suspended in http_defer already: the answer may even have come by now */
        ret = MHD_YES;
        goto out;
    }
    ret = http_queue(conn, c, &resp);
out:
    http_response_done(&resp);
    return ret;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_conn *c = *con_cls;
    (void)version;
    if (!c) {
        return http_begin(srv, conn, url, method, con_cls);
    }
    if (c->deferred) {
        /* resumed: the answer has come */
        struct http_deferred *d = c->deferred;
        if (atomic_load(&d->state) != HTTP_DEFERRED_ANSWERED) {
            return MHD_YES;
        }
        if (d->resp.reshape) {
            d->resp.reshape(d->resp.reshape_data, &d->resp);
        }
        return c->early ? http_early(conn, c, &d->resp) : http_queue(conn, c, &d->resp);
    }
    if (*upload_data_size > 0) {
        if (!c->req.body_too_large &&
            buf_append(&c->body, upload_data, *upload_data_size) != BUF_OK) {
            c->req.body_too_large = 1;
            buf_done(&c->body);
            buf_init(&c->body, 0);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    return http_answer(srv, conn, c);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_conn *c = *con_cls;
    (void)conn;
    (void)toe;
    if (!c) {
        return;
    }
    atomic_fetch_sub(&srv->inflight, 1);
    http_release(srv, c, 0);
    /* a kept-alive connection waits for its next request's headers from now */
    http_set_phase(srv, c->track, HTTP_PHASE_HEADERS);
    buf_done(&c->body);
    if (c->deferred) {
        /* handed over first: the answerer reads them once it sees the deferral orphaned */
        c->deferred->app = c->req.app;
        c->deferred->app_free = c->req.app_free;
        int waiting = HTTP_DEFERRED_WAITING;
        if (atomic_compare_exchange_strong(&c->deferred->state, &waiting, HTTP_DEFERRED_ORPHANED)) {
            /* its answer has not come: whoever brings it frees the deferral and the app */
            c->req.app_free = NULL;
            c->deferred = NULL;
        }
    }
    if (c->req.app_free) {
        c->req.app_free(c->req.app);
    }
    if (c->deferred) {
        http_deferred_free(c->deferred);
    }
    free(c);
    *con_cls = NULL;
}

/* ---------------------------------------------------------------- TLS */

static void http_tls_pair_free(struct http_tls_pair *p)
{
    if (!p) {
        return;
    }
    for (unsigned i = 0; i < p->n; i++) {
        gnutls_pcert_deinit(&p->pcert[i]);
    }
    if (p->key) {
        gnutls_privkey_deinit(p->key);
    }
    free(p);
}

/* Drops a reference to p (NULL-safe); the last one frees it. */
static void http_tls_unref(struct http_server *srv, struct http_tls_pair *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&srv->tls_lock);
    int last = --p->refs == 0;
    pthread_mutex_unlock(&srv->tls_lock);
    if (last) {
        http_tls_pair_free(p);
    }
}

/* A whole file of at most HTTP_TLS_FILE_MAX bytes into *ret (its data malloc'd, NUL after it);
 * what names the file in an error. */
static int http_tls_read(const char *what, const char *path, gnutls_datum_t *ret,
                         struct al_error *reterr)
{
    unsigned char *data = malloc(HTTP_TLS_FILE_MAX + 1);
    size_t len = 0;
    FILE *f = fopen(path, "rbe");
    if (!data || !f) {
        error_set_errno(reterr, AL_CONFIG_ERROR, data ? errno : ENOMEM, "cannot read %s %s", what,
                        path);
        goto fail;
    }
    len = fread(data, 1, HTTP_TLS_FILE_MAX + 1, f);
    if (ferror(f) || len > HTTP_TLS_FILE_MAX) {
        error_set(reterr, AL_CONFIG_ERROR, "cannot read %s %s: %s", what, path,
                  ferror(f) ? "read error" : "over 1 MiB");
        goto fail;
    }
    fclose(f);
    data[len] = '\0';
    ret->data = data;
    ret->size = (unsigned)len;
    return 0;
fail:
    if (f) {
        fclose(f);
    }
    if (data) {
        OPENSSL_cleanse(data, len);
    }
    free(data);
    return -1;
}

/* The server certificate's end of validity into p->until and p->expired. */
static void http_tls_until(struct http_tls_pair *p)
{
    gnutls_x509_crt_t crt = NULL;
    struct tm tm;
    snprintf(p->until, sizeof p->until, "an unknown date");
    if (gnutls_x509_crt_init(&crt) < 0) {
        return;
    }
    if (gnutls_x509_crt_import(crt, &p->pcert[0].cert, GNUTLS_X509_FMT_DER) >= 0) {
        time_t until = gnutls_x509_crt_get_expiration_time(crt);
        if (until != (time_t)-1 && gmtime_r(&until, &tm)) {
            strftime(p->until, sizeof p->until, "%Y-%m-%d %H:%M UTC", &tm);
            p->expired = until < time(NULL);
        }
    }
    gnutls_x509_crt_deinit(crt);
}

/* Reads the certificate chain and its key into a new pair (one reference), checking first that
 * the key is the certificate's: what a handshake would otherwise find out, one client at a
 * time. */
static int http_tls_load(const char *cert_path, const char *key_path,
                         struct http_tls_pair **ret_pair, struct al_error *reterr)
{
    gnutls_datum_t cert = { NULL, 0 };
    gnutls_datum_t key = { NULL, 0 };
    gnutls_certificate_credentials_t check = NULL;
    struct http_tls_pair *p = NULL;
    int rc = -1;
    int g;
    if (http_tls_read("TLS certificate", cert_path, &cert, reterr) != 0 ||
        http_tls_read("TLS key", key_path, &key, reterr) != 0) {
        goto out;
    }
    p = calloc(1, sizeof *p);
    if (!p || gnutls_certificate_allocate_credentials(&check) < 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    g = gnutls_certificate_set_x509_key_mem2(check, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (g < 0) {
        error_set(reterr, AL_CONFIG_ERROR, "TLS certificate %s with key %s: %s", cert_path,
                  key_path, gnutls_strerror(g));
        goto out;
    }
    p->n = HTTP_TLS_CHAIN_MAX;
    g = gnutls_pcert_list_import_x509_raw(p->pcert, &p->n, &cert, GNUTLS_X509_FMT_PEM, 0);
    if (g < 0) {
        p->n = 0;
        error_set(reterr, AL_CONFIG_ERROR, "TLS certificate %s: %s (at most %d in the chain)",
                  cert_path, gnutls_strerror(g), HTTP_TLS_CHAIN_MAX);
        goto out;
    }
    g = gnutls_privkey_init(&p->key);
    if (g >= 0) {
        g = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    }
    if (g < 0) {
        error_set(reterr, AL_CONFIG_ERROR, "TLS key %s: %s", key_path, gnutls_strerror(g));
        goto out;
    }
    http_tls_until(p);
    p->refs = 1;
    *ret_pair = p;
    p = NULL;
    rc = 0;
out:
    gnutls_certificate_free_credentials(check);
    http_tls_pair_free(p);
    free(cert.data);
    if (key.data) {
        OPENSSL_cleanse(key.data, key.size);
    }
    free(key.data);
    return rc;
}

/* GnuTLS asks for the server's certificate (MHD_OPTION_HTTPS_CERT_CALLBACK): the connection's
 * track takes a reference to the pair in use, kept until MHD notifies the close. MHD sets the
 * session's pointer to its connection. A connection that could not be tracked (no memory) gets
 * no handshake; one that shakes hands again keeps the pair it took first. */
static int http_tls_pick(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **ret_pcert, unsigned int *ret_n,
                         gnutls_privkey_t *ret_key)
{
    struct MHD_Connection *conn = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *info =
            conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct http_track *t = info ? info->socket_context : NULL;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    if (!t) {
        return -1;
    }
    pthread_mutex_lock(&t->srv->tls_lock);
    if (!t->tls) {
        t->tls = t->srv->tls_pair;
        t->tls->refs++;
    }
    *ret_pcert = t->tls->pcert;
    *ret_n = t->tls->n;
    *ret_key = t->tls->key;
    pthread_mutex_unlock(&t->srv->tls_lock);
    return 0;
}

static void http_tls_said(const char *cert_path, const struct http_tls_pair *p, char *said,
                          size_t said_len)
{
    snprintf(said, said_len, "%s, %s %s", cert_path, p->expired ? "EXPIRED on" : "valid until",
             p->until);
}

void http_tls_describe(struct http_server *srv, char *said, size_t said_len)
{
    pthread_mutex_lock(&srv->tls_lock);
    if (srv->tls_pair) {
        http_tls_said(srv->o.tls_cert, srv->tls_pair, said, said_len);
    } else {
        snprintf(said, said_len, "none: plain HTTP");
    }
    pthread_mutex_unlock(&srv->tls_lock);
}

int http_tls(const struct http_server *srv)
{
    return srv->o.tls_cert != NULL;
}

int http_tls_reload(struct http_server *srv, char *said, size_t said_len)
{
    struct http_tls_pair *p = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (!http_tls(srv)) {
        snprintf(said, said_len, "airlockd serves plain HTTP (no tls_cert)");
        return -1;
    }
    if (http_tls_load(srv->o.tls_cert, srv->o.tls_key, &p, &err) != 0) {
        snprintf(said, said_len, "%s", err.message);
        return -1;
    }
    http_tls_said(srv->o.tls_cert, p, said, said_len);
    pthread_mutex_lock(&srv->tls_lock);
    struct http_tls_pair *old = srv->tls_pair;
    srv->tls_pair = p;
    pthread_mutex_unlock(&srv->tls_lock);
    http_tls_unref(srv, old); /* freed now, or by the last connection that took it */
    return 0;
}

static void http_linger(struct http_server *srv, int fd);

/* Whether connections from `client` are limited per address: all but those named in
 * per_client_exempt (the local machine's own, by default: a reverse proxy on it speaks for
 * every client it has). */
static int http_limited(const struct http_server *srv, const char *client)
{
    for (size_t i = 0; i < srv->o.nexempt; i++) {
        if (strcmp(srv->o.per_client_exempt[i], client) == 0) {
            return 0;
        }
    }
    return client[0] != '\0';
}

/* Tracks each connection from its start to its close, for the reaper; one past its address's
 * limit is shut down at once. */
static void http_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    struct http_server *srv = cls;
    struct http_track *t = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        t = calloc(1, sizeof *t);
        if (!t || !info) {
            free(t);
            return; /* untracked: MHD's idle timeout still ends it */
        }
        t->fd = info->connect_fd;
        t->srv = srv;
        t->phase = HTTP_PHASE_HEADERS;
        t->since_ms = http_now_ms();
        http_client(conn, t->client);
        pthread_mutex_lock(&srv->lock);
        if (srv->quiesced) {
            shutdown(t->fd, SHUT_RDWR); /* stopping: no new connection */
            t->phase = HTTP_PHASE_CLOSING;
        } else if (http_limited(srv, t->client)) {
            unsigned same = 0;
            for (struct http_track *o = srv->tracks; o; o = o->next) {
                same += strcmp(o->client, t->client) == 0 && o->phase != HTTP_PHASE_CLOSING;
            }
            if (same >= srv->o.per_client_connections) {
                shutdown(t->fd, SHUT_RDWR); /* MHD sees it end and closes it */
                t->phase = HTTP_PHASE_CLOSING;
            }
        }
        t->next = srv->tracks;
        if (srv->tracks) {
            srv->tracks->prev = t;
        }
        srv->tracks = t;
        pthread_mutex_unlock(&srv->lock);
        *socket_context = t;
        return;
    }
    if (code == MHD_CONNECTION_NOTIFY_CLOSED && t) {
        pthread_mutex_lock(&srv->lock);
        if (t->linger) {
            http_linger(srv, t->fd);
        }
        if (t->prev) {
            t->prev->next = t->next;
        } else {
            srv->tracks = t->next;
        }
        if (t->next) {
            t->next->prev = t->prev;
        }
        pthread_mutex_unlock(&srv->lock);
        http_tls_unref(srv, t->tls); /* its session is done with the pair */
        free(t);
        *socket_context = NULL;
    }
}

/* Lingering close (as nginx's): a connection answered before its body was read is closed by
 * MHD once the answer is out, and a close with unread data makes the kernel reset the
 * connection - a client still sending its body (one that reads only after it has sent all, as
 * many do) would lose the answer it was sent. So the socket stays open a little longer on a
 * duplicate, and what the client still sends is read and dropped: for at most 2 s and twice the
 * body limit. Under srv->lock. */
static void http_linger(struct http_server *srv, int fd)
{
    struct http_lingering *l = calloc(1, sizeof *l);
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (!l || dup < 0) {
        free(l);
        if (dup >= 0) {
            close(dup);
        }
        return;
    }
    l->fd = dup;
    l->until_ms = http_now_ms() + 2000;
    l->left = srv->o.body_limit_bytes * 2 + 65536;
    l->next = srv->lingering;
    srv->lingering = l;
}

/* Drops what the lingering connections sent; closes those done. Under srv->lock. */
static void http_linger_step(struct http_server *srv, int64_t now)
{
    char sink[16384];
    for (struct http_lingering **p = &srv->lingering; *p;) {
        struct http_lingering *l = *p;
        ssize_t n;
        while (l->left > 0 && (n = recv(l->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {
            l->left = (size_t)n < l->left ? l->left - (size_t)n : 0;
        }
        int over = now >= l->until_ms || l->left == 0 ||
                   (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK));
        if (over) {
            close(l->fd);
            *p = l->next;
            free(l);
        } else {
            p = &l->next;
        }
    }
}

/* Shuts down every connection past its phase's deadline; MHD sees the socket end and closes
 * it. A connection being handled has none: its answer may wait for a run or a person. */
static void *http_reaper(void *arg)
{
    struct http_server *srv = arg;
    unsigned shortest = srv->o.header_timeout_ms < srv->o.body_timeout_ms ? srv->o.header_timeout_ms
                                                                          : srv->o.body_timeout_ms;
    int64_t tick = shortest / 10 < 1000 ? shortest / 10 : 1000;
    pthread_setname_np(pthread_self(), "airlockd-reaper");
    pthread_mutex_lock(&srv->lock);
    while (!srv->stop) {
        int64_t now = http_now_ms();
        for (struct http_track *t = srv->tracks; t; t = t->next) {
            int64_t limit = t->phase == HTTP_PHASE_HEADERS ? (int64_t)srv->o.header_timeout_ms
                            : t->phase == HTTP_PHASE_BODY  ? (int64_t)srv->o.body_timeout_ms
                                                           : -1;
            if (limit >= 0 && now - t->since_ms > limit) {
                shutdown(t->fd, SHUT_RDWR);
                t->phase = HTTP_PHASE_CLOSING; /* once */
            }
        }
        http_linger_step(srv, now);
        int64_t wait = srv->lingering ? 20 : tick; /* a lingering socket is read often */
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += (long)wait * 1000000L; /* wait <= 1000 ms */
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&srv->cond, &srv->lock, &at);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

static int http_bind(const char *host, unsigned port, unsigned *ret_port, struct al_error *reterr)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char service[16];
    int fd = -1;
    int one = 1;
    int bind_errno = 0; /* an address refused: why (the last one's) */
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof service, "%u", port);
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        error_set(reterr, AL_CONFIG_ERROR, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
            break;
        }
        bind_errno = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (bind_errno) {
            error_set_errno(reterr, AL_INTERNAL_ERROR, bind_errno, "cannot listen on %s:%u", host,
                            port);
        }
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "getsockname");
        close(fd);
        return -1;
    }
    *ret_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static void http_defaults(struct http_options *o)
{
    if (o->threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cores > 2 ? (unsigned)(cores < 64 ? cores : 64) : 2;
    }
    o->body_budget_bytes = o->body_budget_bytes ? o->body_budget_bytes : (size_t)64 << 20;
    o->max_connections = o->max_connections ? o->max_connections : 1000;
    o->per_client_connections = o->per_client_connections ? o->per_client_connections : 32;
    if (!o->exempt_set) {
        static const char *const local[] = { "ip4:127.0.0.1", "ip6:::/64" };
        o->nexempt = 2;
        for (size_t i = 0; i < 2; i++) {
            snprintf(o->per_client_exempt[i], sizeof o->per_client_exempt[i], "%s", local[i]);
        }
    }
    o->header_timeout_ms = o->header_timeout_ms ? o->header_timeout_ms : 10000;
    o->body_timeout_ms = o->body_timeout_ms ? o->body_timeout_ms : 30000;
    o->idle_timeout_s = o->idle_timeout_s ? o->idle_timeout_s : 30;
}

/* Stops the reaper (when it runs), closes the lingering connections and frees srv. */
static void http_free(struct http_server *srv)
{
    if (srv->reaping) {
        pthread_mutex_lock(&srv->lock);
        srv->stop = 1;
        pthread_cond_signal(&srv->cond);
        pthread_mutex_unlock(&srv->lock);
        pthread_join(srv->reaper, NULL);
    }
    while (srv->lingering) {
        struct http_lingering *l = srv->lingering;
        srv->lingering = l->next;
        close(l->fd);
        free(l);
    }
    http_tls_unref(srv, srv->tls_pair); /* the daemon is stopped: no connection holds it */
    pthread_cond_destroy(&srv->cond);
    pthread_mutex_destroy(&srv->lock);
    pthread_mutex_destroy(&srv->tls_lock);
    free(srv);
}

int http_start(const struct http_options *opts, struct http_server **ret_server, unsigned *ret_port,
               struct al_error *reterr)
{
    struct http_server *srv = calloc(1, sizeof *srv);
    unsigned bound = 0;
    if (!srv) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    srv->o = *opts;
    http_defaults(&srv->o);
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->cond, NULL);
    pthread_mutex_init(&srv->tls_lock, NULL);
    if (!opts->tls_cert != !opts->tls_key) {
        error_set(reterr, AL_CONFIG_ERROR,
                  "a TLS certificate needs its key, and a key its "
                  "certificate");
        goto fail;
    }
    if (opts->tls_cert && (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
                           MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES)) {
        error_set(reterr, AL_CONFIG_ERROR, "this libmicrohttpd is built without TLS (GnuTLS)");
        goto fail;
    }
    if (opts->tls_cert &&
        http_tls_load(opts->tls_cert, opts->tls_key, &srv->tls_pair, reterr) != 0) {
        goto fail;
    }
    srv->fd = http_bind(opts->host, opts->port, &bound, reterr);
    if (srv->fd < 0) {
        goto fail;
    }
    if (pthread_create(&srv->reaper, NULL, http_reaper, srv) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the HTTP reaper thread");
        close(srv->fd);
        goto fail;
    }
    srv->reaping = 1;
    /* with TLS, the certificate comes from http_tls_pick (MHD reads no file itself) */
    struct MHD_OptionItem tls_opts[] = {
        { MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)http_tls_pick },
        { MHD_OPTION_END, 0, NULL },
    };
    srv->daemon = MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                    MHD_ALLOW_SUSPEND_RESUME | (srv->tls_pair ? MHD_USE_TLS : 0),
            0, NULL, NULL, http_access, srv, MHD_OPTION_ARRAY,
            srv->tls_pair ? tls_opts : &tls_opts[1], MHD_OPTION_LISTEN_SOCKET, srv->fd,
            MHD_OPTION_THREAD_POOL_SIZE, srv->o.threads, MHD_OPTION_NOTIFY_COMPLETED,
            http_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, http_notify, srv,
            MHD_OPTION_CONNECTION_TIMEOUT, srv->o.idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
            srv->o.max_connections, MHD_OPTION_END);
    if (!srv->daemon) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the HTTP server on %s:%u", opts->host,
                  bound);
        close(srv->fd);
        goto fail;
    }
    *ret_server = srv;
    *ret_port = bound;
    return 0;
fail:
    http_free(srv);
    return -1;
}

/* Not MHD_quiesce_daemon: with a thread pool on epoll, libmicrohttpd 0.9.75 races its workers
 * for the listening socket's place in their epoll sets and may abort ("Failed to remove listen
 * FD from epoll set"). A connection accepted from now on is closed at once instead. */
void http_quiesce(struct http_server *srv)
{
    if (!srv) {
        return;
    }
    pthread_mutex_lock(&srv->lock);
    srv->quiesced = 1;
    pthread_mutex_unlock(&srv->lock);
}

void http_stop(struct http_server *srv)
{
    if (!srv) {
        return;
    }
    if (srv->daemon) {
        http_quiesce(srv);
        /* let answers already queued (a drained run's) reach their clients, for a bounded time */
        for (int i = 0; i < 500 && atomic_load(&srv->inflight) > 0; i++) {
            struct timespec tick = { 0, 10 * 1000 * 1000 };
            nanosleep(&tick, NULL);
        }
        MHD_stop_daemon(srv->daemon);
    }
    http_free(srv);
}
