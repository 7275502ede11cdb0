/*
 * http.h - airlockd's HTTP/1.1 front, the only code that sees libmicrohttpd. It collects a
 * request (method, path, Authorization, a body up to a cap), hands it to one handler callback
 * and sends what the handler put in the response, then writes one JSON log line to stderr.
 * Handlers never see the wire (h2o's model).
 */
#ifndef AIRLOCK_SERVER_HTTP_H
#define AIRLOCK_SERVER_HTTP_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"

#define HTTP_REQUEST_ID_LEN 20 /* "req_" + 16 hex */
#define HTTP_ACTOR_MAX      64
#define HTTP_CLIENT_MAX     64 /* "ip4:" or "ip6:" and a numeric address */

struct http_request {
    const char *method;
    const char *path;          /* percent-decoded, without the query */
    const char *authorization; /* the header's value, or NULL */
    const char *body;          /* NUL-terminated; "" when there is none */
    size_t body_len;
    int body_too_large; /* the body passed the cap and was dropped */
    /* Who is calling, as a rate limit key: "ip4:A.B.C.D", or "ip6:" and the address's /64
     * (one host usually holds a whole /64); "" when unknown. */
    char client[HTTP_CLIENT_MAX];
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    void *conn; /* opaque, for http_query */
};

/*
 * A body produced piece by piece after the handler has returned (the audit export): fn is called
 * on the HTTP thread, with no lock of the handler's held, to write up to max bytes at out; it
 * returns how many it wrote (at least 1), HTTP_STREAM_END after the last byte, or
 * HTTP_STREAM_ERROR to cut the answer short (the client sees a truncated chunked body). free_fn
 * is called exactly once when the answer is done or abandoned, also when fn was never called.
 */
#define HTTP_STREAM_END   ((ssize_t)-1)
#define HTTP_STREAM_ERROR ((ssize_t)-2)
typedef ssize_t http_stream_fn(void *userdata, char *out, size_t max);
typedef void http_stream_free_fn(void *userdata);

struct http_response;
/* Rewrites a deferred answer before it is sent (POST /v1/mcp wraps a run's object in its
 * JSON-RPC answer): called on the HTTP thread, with no lock of the handler's held, with the
 * status and body http_deferred_answer gave; it may change both. Pure: it must not reach the
 * store. */
typedef void http_reshape_fn(void *userdata, struct http_response *resp);

struct http_response {
    unsigned status;
    const char *content_type; /* static string; default application/json */
    char allow[64];           /* a 405's Allow header, or "" */
    unsigned retry_after_s;   /* a Retry-After header in seconds, or 0 for none */
    struct buf body;
    char actor[HTTP_ACTOR_MAX + 1]; /* who made the request, for the log line; "" if nobody */
    char route[64];                 /* the route pattern matched, for the log line */
    int deferred;                   /* set by http_defer: the answer comes later */
    const char *etag;               /* static string: an ETag header (quotes included), or NULL */
    /* static strings: more headers as name, value pairs ending with NULL (the UI's
     * Content-Security-Policy and caching), or NULL */
    const char *const *headers;
    /* set by http_stream: the body is sent chunked from stream_fn, resp->body is ignored */
    http_stream_fn *stream_fn;
    http_stream_free_fn *stream_free;
    void *stream_data;
    /* set by a handler before http_defer, which takes them: the deferred answer goes through
     * reshape, and reshape_free(reshape_data) is called once the request is done. A handler
     * that set them and did not defer frees reshape_data itself. */
    http_reshape_fn *reshape;
    void *reshape_data;
    void (*reshape_free)(void *userdata);
};

/* Answers resp (its status and headers as set) with a body read from fn (see http_stream_fn);
 * takes userdata, which free_fn frees in any case. A handler calls it last, once. Whoever drives
 * the handler without http.c (the fuzz target) must call resp->stream_free itself. */
void http_stream(struct http_response *resp, http_stream_fn *fn, http_stream_free_fn *free_fn,
                 void *userdata);

/*
 * A request answered later (a run the client waits for): the handler calls http_defer and
 * returns; the connection is suspended, costing no thread, until exactly one
 * http_deferred_answer from any thread sends the answer and frees the handle. Every deferred
 * request must be answered before http_stop.
 */
struct http_deferred;
/* NULL when out of memory (the handler then answers at once). */
struct http_deferred *http_defer(const struct http_request *req, struct http_response *resp);
void http_deferred_answer(struct http_deferred *d, unsigned status, const char *json, size_t len);
/* The request id of a deferred request, for the error body of its answer (NULL-safe: ""). */
const char *http_deferred_request_id(const struct http_deferred *d);

/* The value of query argument `name` (percent-decoded), NULL when absent; borrowed for the
 * request. */
const char *http_query(const struct http_request *req, const char *name);

/* The value of request header `name` (case-insensitive), NULL when absent or when req has no
 * connection (a request made without http.c); borrowed for the request. */
const char *http_header(const struct http_request *req, const char *name);

typedef void http_handler_fn(void *userdata, const struct http_request *req,
                             struct http_response *resp);

struct http_server;

/* Binds host:port (port 0 picks a free one) and starts serving on an internal thread; every
 * request runs on that one thread. On success *ret_port holds the bound port. -1 with a message
 * in err (256 bytes) otherwise. */
int http_start(const char *host, unsigned port, size_t body_limit_bytes, http_handler_fn *handler,
               void *userdata, struct http_server **ret_server, unsigned *ret_port, char *err);
/* Stops accepting connections; those open are still served. NULL-safe. */
void http_quiesce(struct http_server *server);
/* Stops accepting, gives the requests in progress up to 5 s to finish and frees the server
 * (every deferred request answered first). NULL-safe. */
void http_stop(struct http_server *server);

#endif
