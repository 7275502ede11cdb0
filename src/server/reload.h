/*
 * reload.h - what SIGHUP re-reads while airlockd serves (a TLS certificate, keys): a list of
 * functions main.c fills at start and calls, in order, each time the signal comes.
 */
#ifndef AIRLOCK_SERVER_RELOAD_H
#define AIRLOCK_SERVER_RELOAD_H

#include <stddef.h>

#define RELOAD_MAX      8   /* the things there are to re-read, with room */
#define RELOAD_SAID_MAX 256 /* bytes of what a reload says, its NUL included */

/* Re-reads one thing. 0: re-read, said names what is now in use ("cert.pem, valid until ...");
 * -1: not re-read, said says why, and what was in use stays in use. Called on main's signal
 * thread while requests are served: what it swaps, it swaps under its own lock. It never stops
 * the server. */
typedef int reload_fn(void *arg, char said[RELOAD_SAID_MAX]);

struct reload_list {
    size_t n;
    struct {
        const char *what; /* static storage: names the thing in the log ("TLS certificate") */
        reload_fn *fn;
        void *arg;
    } item[RELOAD_MAX];
};

/* Adds fn to what reload_all calls, after those added before. -1 when the list is full. */
int reload_add(struct reload_list *r, const char *what, reload_fn *fn, void *arg);

/* Calls every function of the list in turn and logs one line each on stderr: what it re-read,
 * or why it kept the one in use. A failure stops neither the others nor the server. */
void reload_all(const struct reload_list *r);

#endif
