/*
 * auth.h - API keys and permissions of airlockd.
 *
 * A key is "ak_" PREFIX "_" SECRET: PREFIX 12 hex digits (public, names the key in the API and
 * finds it in the store), SECRET 64 hex digits (256 random bits). Only SHA-256 of the whole key
 * is stored. A key set by AIRLOCK_BOOTSTRAP_KEY may have any shape (32..256 printable ASCII
 * bytes); its prefix is then the first 12 hex digits of its hash.
 *
 * A permission rule is a set of roles and a scope; auth_check answers allowed, or denied and why
 * (Redis ACL's model): the caller records the denial once, where it answers the request.
 */
#ifndef AIRLOCK_SERVER_AUTH_H
#define AIRLOCK_SERVER_AUTH_H

#include <stddef.h>

#include "rules.h"
#include "store.h"

#define AUTH_PREFIX_LEN 12
#define AUTH_KEY_MAX    256
#define AUTH_KEY_MIN    32
#define AUTH_GRANTS_MAX 64
#define AUTH_WHY_MAX    160

/* The roles as bits: src/gov's enum gov_role, so a principal's grants are its gov_principal. */
enum auth_role {
    AUTH_ROLE_ADMIN = GOV_ROLE_ADMIN,
    AUTH_ROLE_AUTHOR = GOV_ROLE_AUTHOR,
    AUTH_ROLE_APPROVER = GOV_ROLE_APPROVER,
    AUTH_ROLE_AUDITOR = GOV_ROLE_AUDITOR,
    AUTH_ROLE_AGENT = GOV_ROLE_AGENT,
};
#define AUTH_ROLES_ALL GOV_ROLES_ALL

enum auth_scope {
    AUTH_PUBLIC = 0,     /* no key needed */
    AUTH_PRINCIPAL,      /* any principal with a valid key */
    AUTH_ANY_DEPARTMENT, /* one of the roles, granted in any department or "*" */
    AUTH_DEPARTMENT,     /* one of the roles, granted in the route's {d} or "*" */
    /* One of the roles in the department of the resource the route names (a template, a
     * connector, a run, an approval): the router checks the roles in any department, the handler
     * looks the resource up and checks its department with api_allow. */
    AUTH_RESOURCE,
};

struct auth_rule {
    enum auth_scope scope;
    unsigned roles; /* enum auth_role bits; unused for AUTH_PUBLIC and AUTH_PRINCIPAL */
};

/* An authenticated principal. Its grants live in `gov` (its name again, and every role it
 * holds in each department or "*"), which the handlers hand to src/gov's rules as it is. */
struct auth_principal {
    char name[STORE_NAME_MAX + 1];
    char kind[8];
    char key_prefix[AUTH_PREFIX_LEN + 1]; /* the prefix of the key it authenticated with */
    struct gov_principal gov;
    /* a session of the web UI (session.h): 1, the identity the provider vouched for and the
     * session's CSRF token; 0 and "" for an API key */
    int session;
    char identity[257];
    char csrf[65];
    char session_sha256[65]; /* the session's token's hex SHA-256, as the store keeps it */
};

/* The bit of a role's name, or 0 for an unknown name (gov_role_bit). */
unsigned auth_role_bit(const char *name);

/* A new random key (AUTH_KEY_MAX + 1 bytes), its prefix (AUTH_PREFIX_LEN + 1) and hash. 0 on
 * success, -1 when the random generator fails. */
int auth_key_new(char *ret_key, char *ret_prefix, unsigned char ret_hash[STORE_HASH_LEN]);
/* The prefix and hash of a key given from outside. -1 when it is not a key airlockd accepts
 * (length or characters). */
int auth_key_digest(const char *key, char *ret_prefix, unsigned char ret_hash[STORE_HASH_LEN]);

enum auth_result {
    AUTH_OK = 0,
    AUTH_UNAUTHENTICATED = 1,
    AUTH_FORBIDDEN = 2,
    AUTH_STORE_FAILED = 3,
};

/* Checks an Authorization header value ("Bearer KEY"; may be NULL) against the store: on
 * AUTH_OK *ret fills with the principal and its grants (at most AUTH_GRANTS_MAX; further ones,
 * and grants of an unknown role, are not kept). On failure `why` (AUTH_WHY_MAX) says
 * why, naming no secret. */
enum auth_result auth_authenticate(struct store *s, const char *authorization,
                                   struct auth_principal *ret, char *why);

/* The one check of whether principal `name` may act now, whatever it signed in with (an API
 * key, a session): AUTH_OK with *ret filled with its name, kind and grants (as
 * auth_authenticate keeps them; key_prefix empty); AUTH_UNAUTHENTICATED with `why` when there
 * is no such principal or it is disabled; AUTH_STORE_FAILED. */
enum auth_result auth_principal_load(struct store *s, const char *name, struct auth_principal *ret,
                                     char *why);

/* STORE_OK when the key of `prefix` is still active and held by `principal`, as the store says
 * now, and that principal is not disabled; STORE_NOT_FOUND otherwise (a key revoked since it
 * was checked, or never known; its principal disabled), or the store's failure. Two indexed
 * reads. */
enum store_rc auth_key_active(struct store *s, const char *prefix, const char *principal);

/* The grants `name` holds as the store says now (the connection's view), into *ret, named
 * `name`; grants kept as auth_authenticate keeps them. STORE_OK or the store's failure. */
enum store_rc auth_grants(struct store *s, const char *name, struct gov_principal *ret);

/* AUTH_OK when `who` may use a route with `rule` on `department` (the route's {d}, or the
 * resource's department for AUTH_RESOURCE; NULL when it has none - an AUTH_RESOURCE rule then
 * asks for the roles in any department); AUTH_FORBIDDEN with `why` otherwise. */
enum auth_result auth_check(const struct auth_principal *who, const struct auth_rule *rule,
                            const char *department, char *why);

#endif
