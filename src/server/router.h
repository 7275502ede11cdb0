/*
 * router.h - airlockd's one table of routes. Each row names the method, the path pattern
 * ({name} matches one segment), the handler, the permission rule and whether the handler
 * writes; the router matches a request against it (404 for no pattern, 405 for a pattern
 * without that method), authenticates and authorises it from its headers alone, records every
 * refusal in the audit log and only then has the body read and calls the handler: on a reader,
 * or as a job of the writer for a route that writes. Every request also takes a token from a
 * rate limit bucket: its key's (by prefix) once the key is valid, its client address's
 * otherwise - a far smaller one when the key is missing or bad, so a flood of bad keys is limited
 * as well, and a limited request costs no audit write. The table is printed by `airlockd
 * --print-routes` so tests walk the same rows.
 */
#ifndef AIRLOCK_SERVER_ROUTER_H
#define AIRLOCK_SERVER_ROUTER_H

#include <stdio.h>

#include "http.h"
#include "ratelimit.h"
#include "secretbox.h"
#include "store.h"

struct api_services;
struct readers;
struct writer;

struct router {
    struct readers *readers; /* request threads' connections */
    struct writer *writer;   /* what routes that write run on */
    struct api_services *svc;
    struct ratelimit *limit; /* NULL: no rate limit */
    /* requests refused for their key (401), by client address; NULL: `limit` */
    struct ratelimit *unauth_limit;
    size_t body_limit_bytes; /* a declared body past this is refused before it is read */
    /* ... but for the routes whose body is a snapshot's tar (POST /v1/snapshots); 0: the same */
    size_t snapshot_limit_bytes;
    /* The key that seals connector secrets (secretbox.h), 32 bytes; NULL: connectors cannot be
     * registered (500). */
    struct secretbox_keys *secret_keys;
};

/* An http_admit_fn (userdata is a struct router *): the route, the rate limit, the declared
 * size, the key and the route's roles; answered there, or resp->status left 0. */
void router_admit(void *userdata, struct http_request *req, struct http_response *resp);
/* An http_handler_fn, after router_admit: the handler. */
void router_dispatch(void *userdata, const struct http_request *req, struct http_response *resp);
/* Both, for a request made without http.c (the fuzz target): router_admit, then
 * router_dispatch unless it answered. A route that writes waits for its commit. */
void router_handle(void *userdata, struct http_request *req, struct http_response *resp);
/* Writes the table as a JSON array of {"method","path","scope","roles":[...]}. */
void router_print(FILE *out);

#endif
