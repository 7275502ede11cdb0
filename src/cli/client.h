/*
 * client.h - the airlock command as airlockd's client: one HTTP request at a time over libcurl,
 * to the server at $AIRLOCK_URL with the key $AIRLOCK_KEY as bearer. Commands that talk to
 * airlockd (types, mcp, template, runs, approvals, audit export) open one client, make their
 * requests and print; this file owns the transport and the shape of a refusal's message.
 */
#ifndef AIRLOCK_CLI_CLIENT_H
#define AIRLOCK_CLI_CLIENT_H

#include <stddef.h>

#include "buf.h"

#define CLIENT_ANSWER_MAX ((size_t)64 << 20)
/* Nesting of an answer read whole: a run's value or a call's arguments nest as deep as values
 * cross the sandbox's boundary (1000 levels), a few levels down in the answer. */
#define CLIENT_ANSWER_DEPTH 1100u

struct client {
    char base[2048]; /* AIRLOCK_URL without a trailing '/' */
    char auth[4200]; /* "Authorization: Bearer KEY" */
    long timeout_s;  /* per request; 0 waits as long as the server takes */
    void *curl;      /* CURL *, reused across requests (keep-alive) */
};

/* Reads AIRLOCK_URL and AIRLOCK_KEY. On a missing one prints that `command` needs them and
 * returns -1 (a usage error: exit 2); -1 too when libcurl cannot start (message printed). */
int client_open(struct client *c, const char *command);
void client_close(struct client *c);

/* METHOD base+path with the key; `body` (JSON, may be NULL) is sent as application/json. The
 * answer's body is appended to `answer` (capped at CLIENT_ANSWER_MAX) and its status put in
 * *status. 0, or -1 when airlockd was not reached (message printed). */
int client_request(struct client *c, const char *method, const char *path, const char *body,
                   size_t body_len, struct buf *answer, long *status);

/* Takes `len` bytes of a streamed answer; nonzero stops the transfer (after printing why). */
typedef int client_sink_fn(void *userdata, const char *data, size_t len);
/* GET base+path, the answer's body handed to `sink` as it arrives while the status is 2xx
 * (an answer of any size in constant memory); another status's body goes to `answer`. 0, or
 * -1 when airlockd was not reached, the transfer broke off or the sink refused (message
 * printed). */
int client_stream(struct client *c, const char *path, client_sink_fn *sink, void *userdata,
                  struct buf *answer, long *status);

/* Prints "airlock: WHAT: STATUS CODE: MESSAGE" from an error answer, or the status alone. */
void client_refused(const char *what, long status, const struct buf *answer);

/* 1 when `s` may be put into a path as it is (a template, principal or run name: letters,
 * digits, '-', '_', '.', 1 to 128 bytes), else 0. */
int client_segment_ok(const char *s);

#endif
