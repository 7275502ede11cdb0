/*
 * http.c - libmicrohttpd behind http.h. Per-request state is made on the first call of the
 * access handler and freed in the completion callback (MHD's model); the body is collected into
 * a capped buffer and, once past the cap, read and dropped so the client still gets its 413
 * instead of a reset. airlockd binds its own socket (so HOST may be any name getaddrinfo knows
 * and port 0 works) and hands it to MHD. One internal polling thread serves every request: the
 * store is used by that thread and the run writer, under the router's lock. A streamed body's
 * callback runs later on the same thread without that lock (it takes it itself, per piece). The
 * log line is written here, once per request, when the answer is queued (for a streamed body,
 * before its first byte), because only here are both the request and its final status known.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "metrics.h"
#include "thread.h"

struct http_server {
    struct MHD_Daemon *daemon;
    atomic_int inflight; /* requests begun and not yet completed */
    int quiesced;
    http_handler_fn *handler;
    void *userdata;
    size_t body_limit;
    int fd;
};

struct http_deferred {
    struct MHD_Connection *conn;
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    /* the answer: written by the answering thread before MHD_resume_connection, whose lock
     * orders the writes before the MHD thread reads them */
    unsigned status;
    struct buf body;
    char actor[HTTP_ACTOR_MAX + 1];
    char route[64];
    http_reshape_fn *reshape; /* taken from the handler's response, with its data */
    void *reshape_data;
    void (*reshape_free)(void *userdata);
};

struct http_conn {
    struct http_request req;
    struct buf body;
    struct timespec start;
    struct http_deferred *deferred; /* while the answer is awaited, and until it is sent */
};

static void http_request_id(char *out)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[8] = { 0 };
    if (RAND_bytes(raw, sizeof raw) != 1) {
        /* Only a label for logs: the clock is as good as anything when the generator fails. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        memcpy(raw, &ts.tv_nsec, sizeof raw < sizeof ts.tv_nsec ? sizeof raw : sizeof ts.tv_nsec);
    }
    memcpy(out, "req_", 4);
    for (size_t i = 0; i < sizeof raw; i++) {
        out[4 + 2 * i] = digits[raw[i] >> 4];
        out[5 + 2 * i] = digits[raw[i] & 15];
    }
    out[HTTP_REQUEST_ID_LEN] = '\0';
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

/* The MHD response of resp: its buffer copied, or its stream (handed over to MHD, which frees
 * it through http_stream_release; freed here when that cannot be set up). */
static struct MHD_Response *http_response_new(const struct http_response *resp)
{
    if (!resp->stream_fn) {
        return MHD_create_response_from_buffer(resp->body.len, resp->body.data,
                                               MHD_RESPMEM_MUST_COPY);
    }
    struct http_stream *st = calloc(1, sizeof *st);
    struct MHD_Response *r = NULL;
    if (!st) {
        if (resp->stream_free) {
            resp->stream_free(resp->stream_data);
        }
        return NULL;
    }
    st->fn = resp->stream_fn;
    st->free_fn = resp->stream_free;
    st->userdata = resp->stream_data;
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, http_stream_read, st,
                                          http_stream_release);
    if (!r) {
        http_stream_release(st);
    }
    return r;
}

/* Queues resp on the connection and writes the log line. */
static enum MHD_Result http_queue(struct MHD_Connection *conn, struct http_conn *c,
                                  const struct http_response *resp)
{
    enum MHD_Result ret = MHD_NO;
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
    if (resp->retry_after_s > 0) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u", resp->retry_after_s);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    }
    ret = MHD_queue_response(conn, resp->status, r);
    MHD_destroy_response(r);
    http_log(c, resp);
    /* counted with the log line: both see every answered request, under the same route */
    metrics_http_request(resp->route, resp->status);
    return ret;
}

static enum MHD_Result http_answer(struct http_server *srv, struct MHD_Connection *conn,
                                   struct http_conn *c)
{
    struct http_response resp;
    enum MHD_Result ret = MHD_NO;
    memset(&resp, 0, sizeof resp);
    buf_init(&resp.body, (size_t)64 << 20);
    if (c->deferred) {
        /* resumed: the answer has come */
        struct http_deferred *d = c->deferred;
        resp.status = d->status;
        buf_append(&resp.body, d->body.data ? d->body.data : "", d->body.len);
        snprintf(resp.actor, sizeof resp.actor, "%s", d->actor);
        snprintf(resp.route, sizeof resp.route, "%s", d->route);
        if (d->reshape) {
            d->reshape(d->reshape_data, &resp);
        }
        ret = http_queue(conn, c, &resp);
        goto out;
    }
    resp.status = 500;
    c->req.body = c->body.data ? c->body.data : "";
    c->req.body_len = c->body.len;
    srv->handler(srv->userdata, &c->req, &resp);
    if (resp.deferred && c->deferred) {
        /* suspended in http_defer already: the answer may even have come by now */
        ret = MHD_YES;
        goto out;
    }
    ret = http_queue(conn, c, &resp);
out:
    buf_done(&resp.body);
    return ret;
}

struct http_deferred *http_defer(const struct http_request *req, struct http_response *resp)
{
    struct MHD_Connection *conn = req->conn;
    /* every request handed to a handler is the req member of its http_conn */
    struct http_conn *hc = (struct http_conn *)((char *)req - offsetof(struct http_conn, req));
    struct http_deferred *d = calloc(1, sizeof *d);
    if (!d) {
        return NULL;
    }
    d->conn = conn;
    snprintf(d->request_id, sizeof d->request_id, "%s", req->request_id);
    /* the log line's fields, known by now (the router sets them before the handler) */
    snprintf(d->actor, sizeof d->actor, "%s", resp->actor);
    snprintf(d->route, sizeof d->route, "%s", resp->route);
    buf_init(&d->body, (size_t)64 << 20);
    d->reshape = resp->reshape;
    d->reshape_data = resp->reshape_data;
    d->reshape_free = resp->reshape_free;
    resp->reshape = NULL;
    resp->reshape_data = NULL;
    resp->reshape_free = NULL;
    hc->deferred = d;
    resp->deferred = 1;
    /* suspended before the handle can reach another thread: a resume never precedes it */
    MHD_suspend_connection(conn);
    return d;
}

const char *http_deferred_request_id(const struct http_deferred *d)
{
    return d ? d->request_id : "";
}

void http_deferred_answer(struct http_deferred *d, unsigned status, const char *json, size_t len)
{
    d->status = status;
    if (buf_append(&d->body, json, len) != BUF_OK) {
        d->status = 500;
        buf_reset(&d->body);
        buf_printf(&d->body,
                   "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"the answer was too large\","
                   "\"request_id\":\"%s\"}}\n",
                   d->request_id);
    }
    MHD_resume_connection(d->conn);
}

const char *http_query(const struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_header(const struct http_request *req, const char *name)
{
    if (!req->conn) {
        return NULL;
    }
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_conn *c = *con_cls;
    (void)version;
    if (!c) {
        /* libmicrohttpd's thread is not ours to start: it asks on its first request */
        static _Thread_local int sliced;
        if (!sliced) {
            thread_take_short_slice();
            sliced = 1;
        }
        c = calloc(1, sizeof *c);
        if (!c) {
            return MHD_NO;
        }
        clock_gettime(CLOCK_MONOTONIC, &c->start);
        buf_init(&c->body, srv->body_limit);
        c->req.method = method;
        c->req.path = url;
        c->req.authorization =
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        http_request_id(c->req.request_id);
        http_client(conn, c->req.client);
        c->req.conn = conn;
        *con_cls = c;
        atomic_fetch_add(&srv->inflight, 1);
        return MHD_YES;
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
    if (c) {
        atomic_fetch_sub(&srv->inflight, 1);
        buf_done(&c->body);
        if (c->deferred) {
            if (c->deferred->reshape_free) {
                c->deferred->reshape_free(c->deferred->reshape_data);
            }
            buf_done(&c->deferred->body);
            free(c->deferred);
        }
        free(c);
        *con_cls = NULL;
    }
}

static int http_bind(const char *host, unsigned port, unsigned *ret_port, char *err)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char service[16];
    int fd = -1;
    int one = 1;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof service, "%u", port);
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        snprintf(err, 256, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 256) == 0) {
            break;
        }
        snprintf(err, 256, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0) {
        snprintf(err, 256, "getsockname: %s", strerror(errno));
        close(fd);
        return -1;
    }
    *ret_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int http_start(const char *host, unsigned port, size_t body_limit_bytes, http_handler_fn *handler,
               void *userdata, struct http_server **ret_server, unsigned *ret_port, char *err)
{
    struct http_server *srv = calloc(1, sizeof *srv);
    unsigned bound = 0;
    if (!srv) {
        snprintf(err, 256, "out of memory");
        return -1;
    }
    srv->handler = handler;
    srv->userdata = userdata;
    srv->body_limit = body_limit_bytes;
    srv->fd = http_bind(host, port, &bound, err);
    if (srv->fd < 0) {
        free(srv);
        return -1;
    }
    srv->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                                           MHD_ALLOW_SUSPEND_RESUME,
                                   0, NULL, NULL, http_access, srv, MHD_OPTION_LISTEN_SOCKET,
                                   srv->fd, MHD_OPTION_NOTIFY_COMPLETED, http_completed, srv,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                                   MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!srv->daemon) {
        snprintf(err, 256, "cannot start the HTTP server on %s:%u", host, bound);
        close(srv->fd);
        free(srv);
        return -1;
    }
    *ret_server = srv;
    *ret_port = bound;
    return 0;
}

void http_quiesce(struct http_server *srv)
{
    if (!srv || !srv->daemon || srv->quiesced) {
        return;
    }
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd != MHD_INVALID_SOCKET) {
        close(fd);
    }
    srv->quiesced = 1;
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
    free(srv);
}
