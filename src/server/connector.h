/*
 * connector.h - the outgoing side of a connector: what a call needs (loaded from the store and
 * decrypted) and the HTTP client that performs calls, many at once on one thread.
 *
 * A call is `POST url` with the JSON body
 *   {"function":"crm.lookup","args":[...],"run":"run_...","template":"...","version":N,
 *    "principal":"...","call":N,"idempotency_key":"..."}
 * the connector's registered headers, Content-Type: application/json, and
 *   X-Airlock-Signature: t=UNIX,v1=HEX
 * HEX being lowercase hex HMAC-SHA-256(signing_secret, "UNIX.BODY"). The answer must be HTTP 200
 * with a JSON object {"result":V} or {"error":"message"}; anything else fails the call with a
 * message for the guest that names the connector and how it failed, never the connector's raw
 * body. Only http and https, no redirects, no proxy from the environment, no cookies, the
 * answer capped at CONNECTOR_ANSWER_MAX bytes, the whole call bounded by the connector's
 * timeout_ms (connection included).
 */
#ifndef AIRLOCK_SERVER_CONNECTOR_H
#define AIRLOCK_SERVER_CONNECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "secretbox.h"
#include "store.h"

#define CONNECTOR_ANSWER_MAX     ((size_t)1 << 20) /* bytes of an answer's body */
#define CONNECTOR_ERROR_MAX      200               /* bytes of a connector's error message kept */
#define CONNECTOR_MESSAGE_MAX    512               /* bytes of a failure message */
#define CONNECTOR_CANCEL_POLL_MS 100               /* how often cancelled() is asked */

/* Everything a call needs, decrypted: url, signing secret, headers, timeout_ms, and per
 * function its flags and compiled schemas. Owned by the caller; immutable once loaded, so any
 * number of calls (on the client thread) may use it at once. It must outlive every call made
 * with it. */
struct connector_target;
struct json_node;

/* Loads connector `name` from the store and opens its sealed secret and headers with
 * secret_keys. 0 with *ret (free with connector_target_free); 1 when there is no such connector;
 * -1 with reterr set when the store fails or out of memory (AL_INTERNAL_ERROR) or the stored row
 * does not open or parse (AL_CONFIG_ERROR: a wrong key, an altered row). */
int connector_target_load(struct store *s, struct secretbox_keys *secret_keys, const char *name,
                          struct connector_target **ret, struct al_error *reterr);
/* NULL-safe; cleanses the secret and the headers. */
void connector_target_free(struct connector_target *t);
/* The function's flags (each 0 or 1); -1 when the connector has no function `fn` ("lookup"). */
int connector_function_flags(const struct connector_target *t, const char *fn, int *ret_sensitive,
                             int *ret_idempotent);

/* 0 when the arguments (boundary JSON array) keep the function's args_schema (or it has none);
 * -1 with the guest's TypeError message in `message` (see connector_done_fn) when they break
 * it. For a sensitive call, checked before a person is asked to approve it. */
int connector_check_args(const struct connector_target *t, const char *fn, const char *args_json,
                         char *message, size_t cap);

/* 0 when `result` (a JSON value) keeps the function's result_schema (or it has none, or the
 * connector has no function `fn`); -1 with the schema's reason in `message` when it breaks it:
 * the check a connector's own answer gets, for a result a person gives (an in_doubt answer). */
int connector_check_result(const struct connector_target *t, const char *fn,
                           const struct json_node *result, char *message, size_t cap);

/* One thread driving curl_multi: any number of calls in flight, no thread per call. */
struct connector_client;

/* NULL when the thread or curl cannot start. */
struct connector_client *connector_client_new(void);
/* NULL-safe. Completes every pending call with an error first (done is called for each, on the
 * client thread, before this returns), then stops the thread. */
void connector_client_free(struct connector_client *c);

struct connector_request {
    const struct connector_target *target;
    const char *function;  /* "lookup" */
    const char *args_json; /* the boundary-format JSON array of the arguments */
    const char *run_id;
    const char *template_name;
    int64_t version;
    const char *principal;
    uint32_t call;
    const char *idempotency_key;
    /* Polled on the client thread at least every CONNECTOR_CANCEL_POLL_MS while the call is
     * pending (with done's userdata); non-zero aborts it: done then says "cancelled". May be
     * NULL. */
    int (*cancelled)(void *userdata);
};

enum connector_outcome {
    CONNECTOR_FAILED = 0,
    CONNECTOR_RETURNED = 1,
    CONNECTOR_ARGS_REFUSED = 2, /* the arguments break args_schema: nothing was sent */
};

/* outcome CONNECTOR_RETURNED: result_json is the text of the answer's "result" member (len bytes,
 * NUL-terminated) and message is NULL. Otherwise result_json is NULL and message is for the guest.
 * For CONNECTOR_ARGS_REFUSED it names the function, the argument (by position, as the function's
 * TypeScript declaration does: "argument 2 (arg2)") and the rule it breaks; the guest sees a
 * TypeError. For CONNECTOR_FAILED it names the connector and function and says how the call
 * failed - refused, timed out after N ms, HTTP N, not JSON, an answer of neither shape, the
 * answer over N bytes, closed mid-answer, cancelled, the result breaks result_schema, or the
 * connector's own {"error":"message"} (cut to CONNECTOR_ERROR_MAX bytes, made valid UTF-8). The
 * pointers are valid during the call only. Called exactly once, on the client thread. */
typedef void connector_done_fn(void *userdata, enum connector_outcome outcome,
                               const char *result_json, size_t len, const char *message);

/* Starts a call; every string of req is copied, req->target is borrowed (see above). 0, and
 * done will be called; -1 (bad request: no target, unknown function, args not a JSON array;
 * out of memory; the client stopping) and done is never called. Thread-safe. */
int connector_client_call(struct connector_client *c, const struct connector_request *req,
                          connector_done_fn *done, void *userdata);

/* A post's end: ok 1 when the URL answered HTTP 2xx (its body is not read further), else 0 with
 * message saying how it failed (as a call's). Called exactly once, on the client thread. */
typedef void connector_post_fn(void *userdata, int ok, const char *message);

/* A target that is a URL and a signing secret alone, no headers and no functions, for
 * connector_client_post (the audit witness); `name` names it in messages. NULL when out of
 * memory. Free with connector_target_free. */
struct connector_target *connector_target_new(const char *name, const char *url, const char *secret,
                                              int64_t timeout_ms);

/* POSTs body (len bytes of JSON) to t's URL as a call goes (Content-Type: application/json,
 * X-Airlock-Signature: t=UNIX,v1=HEX over "UNIX.BODY", the same hardening and t's timeout). 0,
 * and done will be called; -1 (out of memory, the client stopping) and it never is. body is
 * copied, t borrowed until done. Thread-safe. */
int connector_client_post(struct connector_client *c, const struct connector_target *t,
                          const char *body, size_t len, connector_post_fn *done, void *userdata);

#endif
