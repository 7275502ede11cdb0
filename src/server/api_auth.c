/*
 * api_auth.c - the web UI's sign-in with OpenID Connect (oidc.h, session.h, docs/sso.md):
 * GET /auth/options (what the sign-in page offers), GET /auth/login (to the provider),
 * GET /auth/callback (back from it: a session) and POST /auth/logout (the session ended on the
 * server). The callback's network work - the code's exchange and the ID token's checks - runs
 * before its writer job, on the request thread, so the writer never waits on the provider; the
 * job finds the principal linked to the identity and keeps the session with its audit record.
 * Every refusal is audited (auth.denied) and says why, naming no secret.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "oidc.h"
#include "session.h"

static int64_t api_auth_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The cookies' Secure attribute: set when the browser reaches airlockd over TLS, which the
 * redirect URL the provider sends it back to says (directly, or through a TLS proxy). */
static const char *api_auth_secure(const struct oidc_config *cfg)
{
    return strncmp(cfg->redirect_url, "https://", 8) == 0 ? "; Secure" : "";
}

static const struct oidc_config *api_auth_config(struct api_ctx *ctx)
{
    const struct oidc_provider *p = ctx->svc ? ctx->svc->oidc : NULL;
    return p ? p->cfg : NULL;
}

void api_auth_options(struct api_ctx *ctx)
{
    const struct oidc_config *cfg = api_auth_config(ctx);
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    api_reply(ctx, 200);
    buf_printf(&ctx->resp->body, "{\"oidc\":%s,\"key_sign_in\":%s}\n", cfg ? "true" : "false",
               !cfg || cfg->key_sign_in ? "true" : "false");
}

void api_auth_login(struct api_ctx *ctx)
{
    const struct oidc_config *cfg = api_auth_config(ctx);
    struct oidc_login login;
    char cookie[OIDC_COOKIE_VALUE_MAX + 1];
    char why[OIDC_WHY_MAX];
    unsigned char keys[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN];
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    if (!cfg || !ctx->secret_keys) {
        api_error(ctx, 404, "NOT_FOUND", "single sign-on is not configured (docs/sso.md)");
        return;
    }
    int made = secretbox_keys_copy(ctx->secret_keys, keys) > 0
                       ? oidc_login_new(keys[0], api_auth_now_ms() / 1000, &login, cookie)
                       : -1;
    OPENSSL_cleanse(keys, sizeof keys);
    if (made != 0) {
        api_error(ctx, 500, "INTERNAL", "the random generator failed");
        return;
    }
    if (oidc_authorize_url(ctx->svc->oidc, &login, ctx->resp->location, why) != 0) {
        ctx->resp->location[0] = '\0';
        api_error(ctx, 500, "INTERNAL", "the identity provider: %s", why);
        return;
    }
    /* SameSite=Lax: the provider's redirect back is a top-level navigation from its site */
    snprintf(ctx->resp->set_cookie[0], sizeof ctx->resp->set_cookie[0],
             OIDC_LOGIN_COOKIE "=%s; Path=/auth/callback; Max-Age=%d; HttpOnly; SameSite=Lax%s",
             cookie, OIDC_LOGIN_TTL_S, api_auth_secure(cfg));
    api_reply(ctx, 302);
    OPENSSL_cleanse(cookie, sizeof cookie);
}

int api_auth_callback_before(struct api_ctx *ctx)
{
    const struct oidc_config *cfg = api_auth_config(ctx);
    struct oidc_login login;
    char cookie[OIDC_COOKIE_VALUE_MAX + 1];
    char why[OIDC_WHY_MAX];
    const char *code = http_query(ctx->req, "code");
    const char *state = http_query(ctx->req, "state");
    const char *error = http_query(ctx->req, "error");
    unsigned char keys[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN];
    if (!cfg || !ctx->secret_keys) {
        api_error(ctx, 404, "NOT_FOUND", "single sign-on is not configured (docs/sso.md)");
        return -1;
    }
    if (error) {
        snprintf(why, sizeof why, "the identity provider refused the sign-in: %.64s", error);
        goto refused;
    }
    if (session_cookie_get(http_header(ctx->req, "Cookie"), OIDC_LOGIN_COOKIE, cookie,
                           sizeof cookie) != 0) {
        snprintf(why, sizeof why, "no sign-in in progress in this browser (no login cookie)");
        goto refused;
    }
    /* under any of the secret keys: a sign-in begun on a node of a cluster in the middle of a
     * rotation may end on another (docs/operations.md) */
    size_t n = secretbox_keys_copy(ctx->secret_keys, keys);
    int opened = -1;
    for (size_t i = 0; opened != 0 && i < n; i++) {
        opened = oidc_login_open(keys[i], cookie, api_auth_now_ms() / 1000, &login, why);
    }
    OPENSSL_cleanse(keys, sizeof keys);
    if (opened != 0) {
        goto refused;
    }
    if (!code || !state || strlen(state) != strlen(login.state) ||
        CRYPTO_memcmp(state, login.state, strlen(state)) != 0) {
        snprintf(why, sizeof why, "the state is not this sign-in's");
        goto refused;
    }
    ctx->claims = ctx->claims ? ctx->claims : calloc(1, sizeof *ctx->claims);
    if (!ctx->claims) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return -1;
    }
    if (oidc_sign_in(ctx->svc->oidc, code, &login, api_auth_now_ms() / 1000, ctx->claims, why) !=
        0) {
        goto refused;
    }
    return 0;
refused:
    ctx->who = NULL;
    api_denied(ctx, 401, why);
    return -1;
}

/* The principal principal_find_identity found, when it is a user. */
static int api_auth_user_of(void *userdata, const struct store_principal *p)
{
    if (strcmp(p->kind, "user") == 0 && strlen(p->name) <= STORE_NAME_MAX) {
        memcpy(userdata, p->name, strlen(p->name) + 1);
    }
    return 1;
}

void api_auth_callback(struct api_ctx *ctx)
{
    const struct oidc_config *cfg = api_auth_config(ctx);
    struct store *s = ctx->store;
    char name[STORE_NAME_MAX + 1] = "";
    char token[SESSION_TOKEN_LEN + 1] = "";
    char hash[65];
    char why[AUTH_WHY_MAX];
    struct buf grants;
    struct buf details;
    int64_t now = api_auth_now_ms();
    buf_init(&grants, 8192);
    buf_init(&details, 16384);
    if (!ctx->claims) { /* its check, which runs first, has verified none */
        api_error(ctx, 500, "INTERNAL", "the sign-in's claims are missing");
        goto out;
    }
    struct auth_principal who;
    enum store_rc rc =
            s->ops->principal_find_identity(s, ctx->claims->identity, api_auth_user_of, name);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && !name[0])) {
        snprintf(why, sizeof why, "no principal of kind user is linked to identity %.96s",
                 ctx->claims->identity);
        api_denied(ctx, 401, why);
        goto out;
    }
    /* the rule of keys: a disabled principal is signed in by nothing */
    enum auth_result ar = rc == STORE_OK ? auth_principal_load(s, name, &who, why) : AUTH_OK;
    if (ar == AUTH_UNAUTHENTICATED) {
        api_denied(ctx, 401, why);
        goto out;
    }
    if (ar == AUTH_STORE_FAILED) {
        rc = STORE_ERROR;
    }
    session_group_grants(cfg, ctx->claims, &grants);
    buf_append_str(&details, "{\"identity\":");
    json_write_string(&details, ctx->claims->identity, strlen(ctx->claims->identity));
    buf_printf(&details, ",\"group_grants\":%s}", grants.data ? grants.data : "[]");
    if (rc == STORE_OK &&
        (buf_failed(&grants) || buf_failed(&details) || session_token_new(token, hash) != 0)) {
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_begin(s);
    }
    if (rc == STORE_OK) {
        struct store_session sess = { hash,        name, ctx->claims->identity,
                                      grants.data, NULL, now + cfg->session_ttl_ms };
        rc = s->ops->session_create(s, &sess, now);
        if (rc == STORE_OK) {
            rc = s->ops->audit_append(s, name, "auth.login", name, NULL, details.data, NULL);
        }
        rc = api_tx_end(s, rc);
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        goto out;
    }
    snprintf(ctx->resp->set_cookie[0], sizeof ctx->resp->set_cookie[0],
             SESSION_COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Strict%s", token,
             (long long)(cfg->session_ttl_ms / 1000), api_auth_secure(cfg));
    snprintf(ctx->resp->set_cookie[1], sizeof ctx->resp->set_cookie[1],
             OIDC_LOGIN_COOKIE "=; Path=/auth/callback; Max-Age=0; HttpOnly; SameSite=Lax%s",
             api_auth_secure(cfg));
    snprintf(ctx->resp->location, sizeof ctx->resp->location, "/");
    api_reply(ctx, 302);
out:
    OPENSSL_cleanse(token, sizeof token);
    buf_done(&grants);
    buf_done(&details);
}

void api_auth_logout(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    if (api_body(ctx, NULL, 0) != 0) {
        return;
    }
    if (!ctx->who->session) {
        api_error(ctx, 400, "INVALID_REQUEST", "not a session of the web UI: an API key has none");
        return;
    }
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->session_delete(s, ctx->who->session_sha256);
        if (rc == STORE_OK) {
            rc = api_audit(ctx, "auth.logout", ctx->who->name, NULL, "{}");
        }
        rc = api_tx_end(s, rc);
    }
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 401, "UNAUTHENTICATED", "the session has ended already");
        return;
    }
    if (rc != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    const struct oidc_config *cfg = api_auth_config(ctx);
    snprintf(ctx->resp->set_cookie[0], sizeof ctx->resp->set_cookie[0],
             SESSION_COOKIE "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict%s",
             cfg ? api_auth_secure(cfg) : "");
    api_reply(ctx, 200);
    buf_append_str(&ctx->resp->body, "{\"signed_out\":true}\n");
}
