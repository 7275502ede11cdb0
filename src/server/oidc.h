/*
 * oidc.h - single sign-on with OpenID Connect (docs/sso.md): the config file's "oidc" object,
 * the authorization code flow with PKCE (S256), and the checks of an ID token.
 *
 * A sign-in is two requests of one browser. GET /auth/login makes a state, a nonce and a PKCE
 * verifier, keeps them in a short-lived cookie of their own (airlock_login, sealed with an HMAC
 * under airlockd's key so it cannot be forged or altered) and sends the browser to the
 * provider. GET /auth/callback takes the provider's code back: the state in the query must be
 * the cookie's, the code is exchanged at the token endpoint (client_secret_basic, the PKCE
 * verifier) and the ID token is verified - an RS256 or ES256 signature by a key of the
 * provider's JWKS (never alg "none", never a MAC), iss, aud (and azp), exp and the nonce - before
 * its claims name anybody. Discovery ({issuer}/.well-known/openid-configuration) and the JWKS are
 * fetched with libcurl when first needed; the JWKS again when a token names a key not in it.
 * No lock is held across a network call.
 */
#ifndef AIRLOCK_SERVER_OIDC_H
#define AIRLOCK_SERVER_OIDC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "store.h"

#define OIDC_URL_MAX         2048
#define OIDC_TEXT_MAX        256 /* a client id, a claim's name, a group, an identity */
#define OIDC_SECRET_MAX      1024
#define OIDC_GROUPS_MAX      64 /* groups of one ID token that are looked at */
#define OIDC_GROUP_ROLES_MAX 64 /* grants group_roles may give, in all */
#define OIDC_WHY_MAX         256
#define OIDC_RANDOM_LEN      43  /* 32 random bytes in base64url: a state, a nonce, a verifier */
#define OIDC_LOGIN_TTL_S     600 /* from /auth/login to /auth/callback */
#define OIDC_LEEWAY_S        30  /* clock skew allowed on exp, iat */
#define OIDC_SESSION_TTL_MS  (12 * 3600 * 1000LL)
#define OIDC_LOGIN_COOKIE    "airlock_login"

/* One grant group_roles gives a member of `group`. */
struct oidc_group_role {
    char group[OIDC_TEXT_MAX + 1];
    char role[16];
    char department[STORE_NAME_MAX + 1]; /* a department's name or "*" */
};

struct oidc_config {
    int enabled; /* the config file has an "oidc" object */
    char issuer[OIDC_URL_MAX + 1];
    char client_id[OIDC_TEXT_MAX + 1];
    char client_secret[OIDC_SECRET_MAX + 1]; /* cleansed by oidc_config_done */
    char redirect_url[OIDC_URL_MAX + 1];
    char principal_claim[OIDC_TEXT_MAX + 1]; /* default "sub" */
    char groups_claim[OIDC_TEXT_MAX + 1];    /* "": none */
    size_t ngroup_roles;
    struct oidc_group_role group_roles[OIDC_GROUP_ROLES_MAX];
    int key_sign_in;        /* the UI offers sign-in with an API key (default 1) */
    int64_t session_ttl_ms; /* a session's life (default 12 h) */
};

/* Reads the config file's "oidc" object into *ret (enabled): issuer, client_id, client_secret,
 * redirect_url (required), principal_claim, groups_claim, group_roles, key_sign_in,
 * session_ttl_ms. An http:// issuer is taken only on a loopback address. 0, or -1 with `why`
 * (OIDC_WHY_MAX) naming the member. */
int oidc_config_read(const struct json_node *obj, struct oidc_config *ret, char *why);
void oidc_config_done(struct oidc_config *c);

/* 1 when url is https://, or http:// to a loopback address (127.0.0.0/8, ::1, localhost). */
int oidc_url_ok(const char *url);

/* What an ID token must say, and what it said. */
struct oidc_expect {
    const char *issuer;
    const char *client_id;
    const char *nonce;
    const char *principal_claim;
    const char *groups_claim; /* NULL or "": none */
    int64_t now_s;            /* seconds since the epoch */
};

struct oidc_claims {
    char identity[OIDC_TEXT_MAX + 1]; /* the principal claim's value */
    size_t ngroups;
    char groups[OIDC_GROUPS_MAX][OIDC_TEXT_MAX + 1];
};

/* Verifies ID token `jwt` (a compact JWS) with the keys of JWKS `jwks` (its JSON text): the
 * signature (RS256 or ES256 by a key of a matching kid and kty), iss, aud (a string or an array
 * holding client_id; azp, when there, client_id), exp (and iat no later than now, with
 * OIDC_LEEWAY_S), nonce, and a string principal claim. 0 with *ret filled; -1 with `why`
 * (OIDC_WHY_MAX); *ret_no_key set (may be NULL) when no key of the JWKS fits the token's kid. */
int oidc_id_token_verify(const char *jwt, size_t len, const char *jwks, size_t jwks_len,
                         const struct oidc_expect *e, struct oidc_claims *ret, int *ret_no_key,
                         char *why);

/* A login in progress: what GET /auth/login made and the cookie keeps. */
struct oidc_login {
    char state[OIDC_RANDOM_LEN + 1];
    char nonce[OIDC_RANDOM_LEN + 1];
    char verifier[OIDC_RANDOM_LEN + 1];
    int64_t expires_s;
};

#define OIDC_COOKIE_VALUE_MAX (3 * (OIDC_RANDOM_LEN + 1) + 21 + 44)

/* A new login expiring OIDC_LOGIN_TTL_S after now_s, and its cookie value sealed under key
 * (32 bytes). 0, or -1 when the random generator fails. */
int oidc_login_new(const unsigned char *key, int64_t now_s, struct oidc_login *ret,
                   char ret_cookie[OIDC_COOKIE_VALUE_MAX + 1]);
/* The login a cookie value keeps: 0 when its seal holds under key and it has not expired at
 * now_s; -1 with `why` otherwise. */
int oidc_login_open(const unsigned char *key, const char *cookie, int64_t now_s,
                    struct oidc_login *ret, char *why);

/* The PKCE S256 challenge of a verifier: base64url(SHA-256(verifier)), no padding. */
void oidc_challenge(const char *verifier, char ret[OIDC_RANDOM_LEN + 1]);

/* The provider: the config, and what discovery and the JWKS said (fetched when first needed). */
struct oidc_provider {
    const struct oidc_config *cfg; /* borrowed, outlives the provider */
    pthread_mutex_t lock;          /* over the members below, never across a fetch */
    int discovered;
    char authorization_endpoint[OIDC_URL_MAX + 1];
    char token_endpoint[OIDC_URL_MAX + 1];
    char jwks_uri[OIDC_URL_MAX + 1];
    char *jwks; /* its JSON text, or NULL */
    size_t jwks_len;
};

/* NULL when out of memory. */
struct oidc_provider *oidc_provider_new(const struct oidc_config *cfg);
void oidc_provider_free(struct oidc_provider *p);

/* The URL the browser is sent to for `login` (its state, nonce and challenge). 0, or -1 with
 * `why` when discovery failed. */
int oidc_authorize_url(struct oidc_provider *p, const struct oidc_login *login,
                       char ret[OIDC_URL_MAX * 2], char *why);

/* The callback's work once the state matched: `code` exchanged for an ID token with the login's
 * verifier, the token verified (oidc_id_token_verify; the JWKS fetched again once when no key
 * fits). 0 with *ret, or -1 with `why`. */
int oidc_sign_in(struct oidc_provider *p, const char *code, const struct oidc_login *login,
                 int64_t now_s, struct oidc_claims *ret, char *why);

/* Base64url without padding of in[0..n) into out (4 * n / 3 + 4 bytes). */
void oidc_b64url(const unsigned char *in, size_t n, char *out);

#endif
