/*
 * router.h - airlockd's one table of routes. Each row names the method, the path pattern
 * ({name} matches one segment), the handler and the permission rule; the router matches a
 * request against it (404 for no pattern, 405 for a pattern without that method), authenticates
 * and authorises it, records every refusal through the store's audit append and only then calls
 * the handler. Every request also takes a token from a rate limit bucket: its key's (by
 * prefix) once the key is valid, its client address's otherwise - so a flood of bad keys is
 * limited as well, and a limited request costs no audit write. The table is printed by
 * `airlockd --print-routes` so tests walk the same rows.
 */
#ifndef AIRLOCK_SERVER_ROUTER_H
#define AIRLOCK_SERVER_ROUTER_H

#include <pthread.h>
#include <stdio.h>

#include "http.h"
#include "ratelimit.h"
#include "store.h"

struct api_services;

struct router {
    struct store *store;
    struct api_services *svc;
    pthread_mutex_t *store_lock; /* held around every request: the run writer shares the store */
    struct ratelimit *limit;     /* NULL: no rate limit */
    /* The key that seals connector secrets (secretbox.h), 32 bytes; NULL: connectors cannot be
     * registered (500). */
    const unsigned char *secret_key;
};

/* An http_handler_fn: userdata is a struct router *. */
void router_dispatch(void *userdata, const struct http_request *req, struct http_response *resp);
/* Writes the table as a JSON array of {"method","path","scope","roles":[...]}. */
void router_print(FILE *out);

#endif
