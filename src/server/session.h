/*
 * session.h - the web UI's sessions after a sign-in with OpenID Connect (docs/sso.md).
 *
 * A session is a random token (64 hex digits) held by the browser in the cookie airlock_session
 * (HttpOnly, SameSite=Strict, Secure over TLS); the store keeps only its SHA-256, the principal
 * it signs in, the identity the provider vouched for, the grants group_roles gave at that
 * sign-in, and when it ends. A session ends when it expires, at logout (its row deleted), and
 * whenever its principal is disabled, removed or linked to another identity: each request reads
 * the row and the principal again. Its CSRF token is an HMAC of the session token, so nothing
 * more is stored: a request of a cookie session that changes anything (any method but GET and
 * HEAD) must carry it in X-CSRF-Token - another site's form or script can make the browser send
 * the cookie, never the header with the right value.
 */
#ifndef AIRLOCK_SERVER_SESSION_H
#define AIRLOCK_SERVER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "oidc.h"
#include "store.h"

#define SESSION_COOKIE      "airlock_session"
#define SESSION_TOKEN_LEN   64
#define SESSION_CSRF_LEN    64
#define SESSION_CSRF_HEADER "X-CSRF-Token"

/* A new token and its SHA-256 in hex. 0, or -1 when the random generator fails. */
int session_token_new(char ret_token[SESSION_TOKEN_LEN + 1], char ret_sha256[65]);
/* The hex SHA-256 of a token, as the store keeps it. */
void session_token_sha256(const char *token, char ret[65]);
/* The CSRF token of a session token. */
void session_csrf(const char *token, char ret[SESSION_CSRF_LEN + 1]);

/* The value of cookie `name` in a Cookie header (may be NULL) into out (cap bytes): 0, or -1
 * when it is absent or longer. */
int session_cookie_get(const char *cookie_header, const char *name, char *out, size_t cap);

/* The grants group_roles gives the groups of claims, as the JSON array kept with a session
 * ([["role","department"],...]) appended to out. */
void session_group_grants(const struct oidc_config *cfg, const struct oidc_claims *claims,
                          struct buf *out);

/* Authenticates a session token at now_ms: on AUTH_OK *ret is its principal with the grants it
 * holds now plus the session's, ret->identity and ret->csrf set; AUTH_UNAUTHENTICATED with why
 * for an unknown, ended or expired session or a principal gone; AUTH_STORE_FAILED. */
enum auth_result session_authenticate(struct store *s, const char *token, int64_t now_ms,
                                      struct auth_principal *ret, char *why);

#endif
