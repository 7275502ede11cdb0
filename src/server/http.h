/*
 * http.h - airlockd's HTTP/1.1 front, the only code that sees libmicrohttpd. Requests are served
 * by a pool of threads and never wait for one another. Each request is handled in two steps:
 * `admit` once its headers are in, before any byte of its body is read (routing,
 * authentication, the rate limit, size: an unauthenticated, limited or oversized request is
 * answered there and its body never read), and `handler` once its body is in.
 * Handlers never see the wire (h2o's model). One JSON log line per request goes to stderr.
 *
 * What no client can hold: a connection limit per client address and in all, an absolute
 * deadline for a request's headers and one for its body however slowly they trickle in, and a
 * budget for all bodies being received at once. Framing is strict: Content-Length beside
 * Transfer-Encoding, two Content-Length headers, or a Transfer-Encoding other than exactly
 * "chunked" is answered 400 and the connection closed.
 *
 * With a certificate and its key (tls_cert, tls_key) it serves HTTPS alone (GnuTLS, through
 * libmicrohttpd); http_tls_reload re-reads both files while it serves.
 */
#ifndef AIRLOCK_SERVER_HTTP_H
#define AIRLOCK_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock.h"

#include "buf.h"

#define HTTP_REQUEST_ID_LEN 20 /* "req_" + 16 hex */
#define HTTP_ACTOR_MAX      64
#define HTTP_CLIENT_MAX     64 /* "ip4:" or "ip6:" and a numeric address */
#define HTTP_EXEMPT_MAX     8
#define HTTP_LOCATION_MAX   4096 /* a redirect's Location (the identity provider's URL) */
#define HTTP_COOKIE_MAX     512  /* one Set-Cookie header */
#define HTTP_COOKIES_MAX    2

struct http_request {
    const char *method;
    const char *path;          /* percent-decoded, without the query */
    const char *authorization; /* the header's value, or NULL */
    const char *body;          /* NUL-terminated; "" when there is none (and in admit) */
    size_t body_len;
    int body_too_large;      /* the body passed the cap and was dropped */
    int has_content_length;  /* the request declared its body's length ... */
    uint64_t content_length; /* ... this one (known in admit) */
    /* set by admit: the cap of this request's body (its route takes larger ones); 0: the
     * server's body_limit_bytes */
    size_t body_limit_bytes;
    /* Who is calling, as a rate limit key: "ip4:A.B.C.D", or "ip6:" and the address's /64
     * (one host usually holds a whole /64); "" when unknown. */
    char client[HTTP_CLIENT_MAX];
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    int tls;    /* it came over TLS (airlockd serves HTTPS): a cookie set on it can be Secure */
    void *conn; /* opaque, for http_query; NULL for a request made without http.c */
    /* What admit keeps for the handler; app_free(app) is called once the request is done. */
    void *app;
    void (*app_free)(void *app);
};

/*
 * A body produced piece by piece after the handler has returned (the audit export and its
 * verification): fn is called on a request thread, with no lock of the handler's held, to write
 * up to max bytes at out; it returns how many it wrote (at least 1), HTTP_STREAM_END after the
 * last byte, or HTTP_STREAM_ERROR to cut the answer short (the client sees a truncated chunked
 * body). Other requests on the same thread are served between two calls, so a call should do a
 * bounded amount of work. free_fn is called exactly once when the answer is done or abandoned,
 * also when fn was never called.
 */
#define HTTP_STREAM_END   ((ssize_t)-1)
#define HTTP_STREAM_ERROR ((ssize_t)-2)
typedef ssize_t http_stream_fn(void *userdata, char *out, size_t max);
typedef void http_stream_free_fn(void *userdata);

struct http_response;
/* Rewrites a deferred answer before it is sent (POST /v1/mcp wraps a run's object in its
 * JSON-RPC answer): called on a request thread with the status and body the answer gave; it
 * may change both. Pure: it must not reach the store. */
typedef void http_reshape_fn(void *userdata, struct http_response *resp);

struct http_response {
    unsigned status;          /* 0 in admit: read the body and call the handler */
    const char *content_type; /* static string; default application/json */
    char allow[64];           /* a 405's Allow header, or "" */
    unsigned retry_after_s;   /* a Retry-After header in seconds, or 0 for none */
    int close;                /* close the connection after this answer */
    /* The body. A failed append (buf.h) makes the answer a 500 INTERNAL, never a cut body. */
    struct buf body;
    char actor[HTTP_ACTOR_MAX + 1]; /* who made the request, for the log line; "" if nobody */
    char route[64];                 /* the route pattern matched, for the log line */
    int deferred;                   /* set by http_defer: the answer comes later */
    const char *etag;               /* static string: an ETag header (quotes included), or NULL */
    /* static strings: more headers as name, value pairs ending with NULL (the UI's
     * Content-Security-Policy and caching), or NULL */
    const char *const *headers;
    /* a redirect's Location header, or "" (the sign-in's routes, /auth/...) */
    char location[HTTP_LOCATION_MAX + 1];
    /* Set-Cookie headers, each "" or one whole header value */
    char set_cookie[HTTP_COOKIES_MAX][HTTP_COOKIE_MAX + 1];
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

/* A response with an empty body under the answer cap, and what it owns freed (its body, a
 * stream's data it was not sent with), and one moved into another (dst's freed first). */
void http_response_init(struct http_response *resp);
void http_response_done(struct http_response *resp);
void http_response_move(struct http_response *dst, struct http_response *src);

/* Answers resp (its status and headers as set) with a body read from fn (see http_stream_fn);
 * takes userdata, which free_fn frees in any case. A handler calls it last, once. Whoever drives
 * the handler without http.c (the fuzz target) must call resp->stream_free itself. */
void http_stream(struct http_response *resp, http_stream_fn *fn, http_stream_free_fn *free_fn,
                 void *userdata);

/*
 * A request answered later (a run the client waits for, a write waiting for its commit): the
 * handler (or admit) calls http_defer and returns; the connection is suspended, costing no
 * thread, until exactly one http_deferred_reply or http_deferred_answer from any thread sends
 * the answer and frees the handle. A request deferred in admit never has its body read. Every
 * deferred request must be answered before http_stop.
 */
struct http_deferred;
/* NULL when out of memory or when req has no connection (the handler then answers at once). */
struct http_deferred *http_defer(const struct http_request *req, struct http_response *resp);
/* Sends resp: its status, content type, headers and body, or its stream (taken). */
void http_deferred_reply(struct http_deferred *d, struct http_response *resp);
/* Sends status and a JSON body (copied). */
void http_deferred_answer(struct http_deferred *d, unsigned status, const char *json, size_t len);
/* The request id of a deferred request, for the error body of its answer (NULL-safe: ""). */
const char *http_deferred_request_id(const struct http_deferred *d);

/* The value of query argument `name` (percent-decoded), NULL when absent; borrowed for the
 * request. */
const char *http_query(const struct http_request *req, const char *name);

/* The value of request header `name` (case-insensitive), NULL when absent or when req has no
 * connection (a request made without http.c); borrowed for the request. */
const char *http_header(const struct http_request *req, const char *name);

typedef void http_admit_fn(void *userdata, struct http_request *req, struct http_response *resp);
typedef void http_handler_fn(void *userdata, const struct http_request *req,
                             struct http_response *resp);

/* Where and how airlockd serves; zero members take the defaults named. */
struct http_options {
    const char *host;
    unsigned port;                   /* 0 picks a free one */
    unsigned threads;                /* request threads; 0: one per core, at least 2 */
    size_t body_limit_bytes;         /* one request's body */
    size_t body_budget_bytes;        /* all bodies being received at once; 0: 64 MiB */
    unsigned max_connections;        /* 0: 1000 */
    unsigned per_client_connections; /* connections from one address; 0: 32 */
    /* Addresses not limited per address (a local reverse proxy speaks for all its clients),
     * as http_request.client names them; unless exempt_set, 127.0.0.1 and ::1. */
    int exempt_set;
    size_t nexempt;
    char per_client_exempt[HTTP_EXEMPT_MAX][HTTP_CLIENT_MAX];
    unsigned header_timeout_ms; /* from a connection's start (or its last answer) to a
                                 * request's last header byte; 0: 10000 */
    unsigned body_timeout_ms;   /* from the headers to the body's last byte; 0: 30000 */
    unsigned idle_timeout_s;    /* no byte in either direction; 0: 30 */
    /* HTTPS: the PEM files of the certificate (its chain after it) and of its unencrypted
     * private key, both or neither; NULL: plain HTTP. Read at start and by http_tls_reload; the
     * strings must outlive the server. */
    const char *tls_cert;
    const char *tls_key;
    http_admit_fn *admit;
    http_handler_fn *handler;
    void *userdata;
};

struct http_server;

/* Binds host:port and starts serving. On success *ret_port holds the bound port. -1 with reterr
 * set otherwise (AL_CONFIG_ERROR when the host does not resolve or the certificate or key cannot
 * be used - naming the file and why -, else AL_INTERNAL_ERROR). */
int http_start(const struct http_options *opts, struct http_server **ret_server, unsigned *ret_port,
               struct al_error *reterr);
/* Whether the server serves HTTPS (opts had tls_cert). */
int http_tls(const struct http_server *server);

/* What an HTTPS server's certificate is: "FILE, valid until DATE" ("EXPIRED on DATE"). */
void http_tls_describe(struct http_server *server, char *said, size_t said_len);

/* Re-reads the certificate and key files; the connections that come next get the new pair,
 * those open keep theirs. 0 with said naming what is in use now ("FILE, valid until DATE"); -1
 * with said saying why (unreadable, not PEM, a key that is not the certificate's), the pair in
 * use kept. -1 also when the server does not serve HTTPS. Any thread. */
int http_tls_reload(struct http_server *server, char *said, size_t said_len);

/* Stops accepting connections; those open are still served. NULL-safe. */
void http_quiesce(struct http_server *server);
/* Stops accepting, gives the requests in progress up to 5 s to finish and frees the server
 * (every deferred request answered first). NULL-safe. */
void http_stop(struct http_server *server);

#endif
