/*
 * oidc.c - OpenID Connect for the web UI's sign-in (oidc.h). Everything an outsider hands us -
 * the callback's query, the login cookie, the token endpoint's answer, the ID token, the JWKS -
 * is read with bounds and refused whole when anything is off: a token is trusted only after its
 * signature verified with a public key of the provider's JWKS under an algorithm fixed here
 * (RS256, ES256), never the one the token would choose ("none", HS256 with the public key as a
 * MAC key). The network calls (discovery, JWKS, token) go through libcurl to the provider's
 * https:// endpoints (http:// only on loopback), without redirects or proxies, time-limited.
 */
#include "oidc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "buf.h"

#define OIDC_FETCH_MAX     ((size_t)1 << 20)
#define OIDC_FETCH_TIMEOUT 10000L /* ms */
#define OIDC_JWT_MAX       ((size_t)64 << 10)

/* ---------------------------------------------------------------- config */

int oidc_url_ok(const char *url)
{
    if (strncmp(url, "https://", 8) == 0) {
        return url[8] != '\0' && url[8] != '/';
    }
    if (strncmp(url, "http://", 7) != 0) {
        return 0;
    }
    const char *host = url + 7;
    size_t len = strcspn(host, "/?#");
    char h[64];
    if (host[0] == '[') {
        const char *end = memchr(host, ']', len);
        if (!end || (size_t)(end - host - 1) >= sizeof h) {
            return 0;
        }
        memcpy(h, host + 1, (size_t)(end - host - 1));
        h[end - host - 1] = '\0';
        struct in6_addr a6;
        return inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    size_t hlen = strcspn(host, ":/?#");
    if (hlen == 0 || hlen >= sizeof h) {
        return 0;
    }
    memcpy(h, host, hlen);
    h[hlen] = '\0';
    if (strcmp(h, "localhost") == 0) {
        return 1;
    }
    struct in_addr a4;
    return inet_pton(AF_INET, h, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

static int oidc_text(const struct json_node *n, char *out, size_t cap)
{
    if (!n || n->type != JSON_STRING || n->str_len == 0 || n->str_len >= cap ||
        strlen(n->str) != n->str_len) {
        return -1;
    }
    memcpy(out, n->str, n->str_len + 1);
    return 0;
}

static int oidc_group_roles_read(const struct json_node *obj, struct oidc_config *c, char *why)
{
    if (obj->type != JSON_OBJECT) {
        snprintf(why, OIDC_WHY_MAX, "oidc.group_roles must be an object");
        return -1;
    }
    for (const struct json_node *g = obj->child; g; g = g->next) {
        if (g->type != JSON_ARRAY || g->key_len == 0 || g->key_len > OIDC_TEXT_MAX) {
            snprintf(why, OIDC_WHY_MAX, "oidc.group_roles: each group takes an array of grants");
            return -1;
        }
        for (const struct json_node *r = g->child; r; r = r->next) {
            struct oidc_group_role *gr = &c->group_roles[c->ngroup_roles];
            if (c->ngroup_roles >= OIDC_GROUP_ROLES_MAX || r->type != JSON_OBJECT) {
                snprintf(why, OIDC_WHY_MAX, "oidc.group_roles: at most %d grants of objects",
                         OIDC_GROUP_ROLES_MAX);
                return -1;
            }
            const struct json_node *role = json_get(r, "role");
            const struct json_node *dept = json_get(r, "department");
            if (r->count != 2 || oidc_text(role, gr->role, sizeof gr->role) != 0 ||
                gov_role_bit(gr->role) == 0 ||
                oidc_text(dept, gr->department, sizeof gr->department) != 0) {
                snprintf(why, OIDC_WHY_MAX,
                         "oidc.group_roles.%s: each grant is {\"role\", \"department\"} with a "
                         "known role",
                         g->key);
                return -1;
            }
            memcpy(gr->group, g->key, g->key_len + 1);
            c->ngroup_roles++;
        }
    }
    return 0;
}

int oidc_config_read(const struct json_node *obj, struct oidc_config *c, char *why)
{
    memset(c, 0, sizeof *c);
    c->enabled = 1;
    c->key_sign_in = 1;
    c->session_ttl_ms = OIDC_SESSION_TTL_MS;
    snprintf(c->principal_claim, sizeof c->principal_claim, "sub");
    for (const struct json_node *m = obj->child; m; m = m->next) {
        int bad = 0;
        if (strcmp(m->key, "issuer") == 0) {
            bad = oidc_text(m, c->issuer, sizeof c->issuer) != 0 || !oidc_url_ok(c->issuer);
        } else if (strcmp(m->key, "client_id") == 0) {
            bad = oidc_text(m, c->client_id, sizeof c->client_id);
        } else if (strcmp(m->key, "client_secret") == 0) {
            bad = oidc_text(m, c->client_secret, sizeof c->client_secret);
        } else if (strcmp(m->key, "redirect_url") == 0) {
            bad = oidc_text(m, c->redirect_url, sizeof c->redirect_url) != 0 ||
                  (strncmp(c->redirect_url, "https://", 8) != 0 &&
                   strncmp(c->redirect_url, "http://", 7) != 0);
        } else if (strcmp(m->key, "principal_claim") == 0) {
            bad = oidc_text(m, c->principal_claim, sizeof c->principal_claim);
        } else if (strcmp(m->key, "groups_claim") == 0) {
            bad = oidc_text(m, c->groups_claim, sizeof c->groups_claim);
        } else if (strcmp(m->key, "group_roles") == 0) {
            if (oidc_group_roles_read(m, c, why) != 0) {
                return -1;
            }
        } else if (strcmp(m->key, "key_sign_in") == 0) {
            bad = m->type != JSON_TRUE && m->type != JSON_FALSE;
            c->key_sign_in = m->type == JSON_TRUE;
        } else if (strcmp(m->key, "session_ttl_ms") == 0) {
            bad = m->type != JSON_NUMBER || m->num != (double)(int64_t)m->num || m->num < 60000 ||
                  m->num > 30 * 86400000.0;
            c->session_ttl_ms = bad ? 0 : (int64_t)m->num;
        } else {
            snprintf(why, OIDC_WHY_MAX,
                     "oidc takes issuer, client_id, client_secret, redirect_url, principal_claim, "
                     "groups_claim, group_roles, key_sign_in and session_ttl_ms (not \"%s\")",
                     m->key);
            return -1;
        }
        if (bad) {
            snprintf(why, OIDC_WHY_MAX,
                     "oidc.%s is malformed (the issuer: https://, or http:// on a loopback "
                     "address; session_ttl_ms: 60000 to 2592000000)",
                     m->key);
            return -1;
        }
    }
    if (!c->issuer[0] || !c->client_id[0] || !c->client_secret[0] || !c->redirect_url[0]) {
        snprintf(why, OIDC_WHY_MAX, "oidc needs issuer, client_id, client_secret and redirect_url");
        return -1;
    }
    /* discovery's URL is the issuer's with the well-known path: a trailing slash is not kept */
    size_t ilen = strlen(c->issuer);
    if (c->issuer[ilen - 1] == '/') {
        snprintf(why, OIDC_WHY_MAX, "oidc.issuer must not end with a slash");
        return -1;
    }
    return 0;
}

void oidc_config_done(struct oidc_config *c)
{
    OPENSSL_cleanse(c->client_secret, sizeof c->client_secret);
}

/* ---------------------------------------------------------------- base64url */

void oidc_b64url(const unsigned char *in, size_t n, char *out)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        v |= i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0;
        v |= i + 2 < n ? in[i + 2] : 0;
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (i + 1 < n) {
            out[o++] = abc[v >> 6 & 63];
        }
        if (i + 2 < n) {
            out[o++] = abc[v & 63];
        }
    }
    out[o] = '\0';
}

static int oidc_b64url_value(char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '-'             ? 62
           : c == '_'             ? 63
                                  : -1;
}

/* Decodes base64url without padding of in[0..n) into a new buffer (NUL-terminated); NULL for
 * a character outside the alphabet, a length no encoding has, or no memory. */
static unsigned char *oidc_b64url_decode(const char *in, size_t n, size_t *ret_len)
{
    if (n % 4 == 1) {
        return NULL;
    }
    unsigned char *out = malloc(n * 3 / 4 + 2);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; out && i < n; i++) {
        int v = oidc_b64url_value(in[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    if (out) {
        out[o] = '\0';
        *ret_len = o;
    }
    return out;
}

static int oidc_random(char out[OIDC_RANDOM_LEN + 1])
{
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        return -1;
    }
    oidc_b64url(raw, sizeof raw, out);
    return 0;
}

void oidc_challenge(const char *verifier, char ret[OIDC_RANDOM_LEN + 1])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)verifier, strlen(verifier), md);
    oidc_b64url(md, sizeof md, ret);
}

/* ---------------------------------------------------------------- the login cookie */

/* The seal of a cookie's text: HMAC-SHA-256 under a key of its own derived from airlockd's. */
static void oidc_seal(const unsigned char *key, const char *text, size_t len, char out[44])
{
    unsigned char sub[SHA256_DIGEST_LENGTH];
    unsigned char mac[SHA256_DIGEST_LENGTH];
    unsigned int n = 0;
    static const char label[] = "airlock oidc login cookie";
    HMAC(EVP_sha256(), key, 32, (const unsigned char *)label, sizeof label - 1, sub, &n);
    HMAC(EVP_sha256(), sub, sizeof sub, (const unsigned char *)text, len, mac, &n);
    oidc_b64url(mac, sizeof mac, out);
    OPENSSL_cleanse(sub, sizeof sub);
}

int oidc_login_new(const unsigned char *key, int64_t now_s, struct oidc_login *ret,
                   char ret_cookie[OIDC_COOKIE_VALUE_MAX + 1])
{
    if (oidc_random(ret->state) != 0 || oidc_random(ret->nonce) != 0 ||
        oidc_random(ret->verifier) != 0) {
        return -1;
    }
    ret->expires_s = now_s + OIDC_LOGIN_TTL_S;
    int n = snprintf(ret_cookie, OIDC_COOKIE_VALUE_MAX + 1, "%s.%s.%s.%lld.", ret->state,
                     ret->nonce, ret->verifier, (long long)ret->expires_s);
    oidc_seal(key, ret_cookie, (size_t)n, ret_cookie + n);
    return 0;
}

int oidc_login_open(const unsigned char *key, const char *cookie, int64_t now_s,
                    struct oidc_login *ret, char *why)
{
    char seal[44];
    const char *dot = strrchr(cookie, '.');
    size_t len = strnlen(cookie, OIDC_COOKIE_VALUE_MAX + 1);
    if (len > OIDC_COOKIE_VALUE_MAX || !dot) {
        snprintf(why, OIDC_WHY_MAX, "the login cookie is malformed");
        return -1;
    }
    oidc_seal(key, cookie, (size_t)(dot + 1 - cookie), seal);
    if (strlen(dot + 1) != 43 || CRYPTO_memcmp(seal, dot + 1, 43) != 0) {
        snprintf(why, OIDC_WHY_MAX, "the login cookie's seal does not hold");
        return -1;
    }
    /* STATE.NONCE.VERIFIER.EXPIRES. then the seal: each random field exactly its length */
    char *fields[3] = { ret->state, ret->nonce, ret->verifier };
    const char *p = cookie;
    for (int i = 0; i < 3; i++) {
        const char *end = strchr(p, '.');
        if (!end || end - p != OIDC_RANDOM_LEN) {
            snprintf(why, OIDC_WHY_MAX, "the login cookie is malformed");
            return -1;
        }
        memcpy(fields[i], p, OIDC_RANDOM_LEN);
        fields[i][OIDC_RANDOM_LEN] = '\0';
        p = end + 1;
    }
    char *end = NULL;
    long long exp = strtoll(p, &end, 10);
    if (end == p || *end != '.') {
        snprintf(why, OIDC_WHY_MAX, "the login cookie is malformed");
        return -1;
    }
    ret->expires_s = exp;
    if (exp < now_s) {
        snprintf(why, OIDC_WHY_MAX, "the sign-in took longer than %d s: start again",
                 OIDC_LOGIN_TTL_S);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the ID token */

/* A JWK's member decoded from base64url into a BIGNUM, or NULL. */
static BIGNUM *oidc_jwk_bn(const struct json_node *jwk, const char *name)
{
    const struct json_node *n = json_get(jwk, name);
    size_t len = 0;
    if (!n || n->type != JSON_STRING) {
        return NULL;
    }
    unsigned char *raw = oidc_b64url_decode(n->str, n->str_len, &len);
    BIGNUM *bn = raw && len > 0 ? BN_bin2bn(raw, (int)len, NULL) : NULL;
    free(raw);
    return bn;
}

/* The public key of an RSA or P-256 JWK, or NULL. */
static EVP_PKEY *oidc_jwk_key(const struct json_node *jwk, int rsa)
{
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    BIGNUM *a = NULL;
    BIGNUM *b = NULL;
    unsigned char point[65];
    if (!bld) {
        goto out;
    }
    if (rsa) {
        a = oidc_jwk_bn(jwk, "n");
        b = oidc_jwk_bn(jwk, "e");
        if (!a || !b || BN_num_bits(a) < 2048 || !OSSL_PARAM_BLD_push_BN(bld, "n", a) ||
            !OSSL_PARAM_BLD_push_BN(bld, "e", b)) {
            goto out;
        }
    } else {
        const struct json_node *crv = json_get(jwk, "crv");
        a = oidc_jwk_bn(jwk, "x");
        b = oidc_jwk_bn(jwk, "y");
        if (!crv || crv->type != JSON_STRING || strcmp(crv->str, "P-256") != 0 || !a || !b ||
            BN_num_bytes(a) > 32 || BN_num_bytes(b) > 32) {
            goto out;
        }
        point[0] = 4;
        if (BN_bn2binpad(a, point + 1, 32) != 32 || BN_bn2binpad(b, point + 33, 32) != 32 ||
            !OSSL_PARAM_BLD_push_utf8_string(bld, "group", "prime256v1", 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, "pub", point, sizeof point)) {
            goto out;
        }
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    pctx = EVP_PKEY_CTX_new_from_name(NULL, rsa ? "RSA" : "EC", NULL);
    if (!params || !pctx || EVP_PKEY_fromdata_init(pctx) <= 0 ||
        EVP_PKEY_fromdata(pctx, &key, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
        EVP_PKEY_free(key);
        key = NULL;
    }
out:
    BN_free(a);
    BN_free(b);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(pctx);
    return key;
}

/* 1 when sig verifies over signed[0..len) with key: RS256 (PKCS #1 v1.5), or ES256 (JOSE's r||s,
 * 64 bytes, turned into the DER OpenSSL checks). */
static int oidc_sig_ok(EVP_PKEY *key, int rsa, const char *signed_part, size_t len,
                       const unsigned char *sig, size_t sig_len)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *der = NULL;
    int der_len = 0;
    int ok = 0;
    if (!md) {
        return 0;
    }
    if (!rsa) {
        ECDSA_SIG *es = ECDSA_SIG_new();
        BIGNUM *r = sig_len == 64 ? BN_bin2bn(sig, 32, NULL) : NULL;
        BIGNUM *s = sig_len == 64 ? BN_bin2bn(sig + 32, 32, NULL) : NULL;
        if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
            r = s = NULL; /* owned by es */
            der_len = i2d_ECDSA_SIG(es, &der);
        }
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(es);
        if (der_len <= 0) {
            goto out;
        }
        sig = der;
        sig_len = (size_t)der_len;
    }
    ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
         EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)signed_part, len) == 1;
out:
    OPENSSL_free(der);
    EVP_MD_CTX_free(md);
    return ok;
}

/* 1 when the value of claim "aud" is client_id or an array holding it. */
static int oidc_aud_ok(const struct json_node *aud, const char *client_id)
{
    if (aud && aud->type == JSON_STRING) {
        return strcmp(aud->str, client_id) == 0 && strlen(aud->str) == aud->str_len;
    }
    for (const struct json_node *a = aud && aud->type == JSON_ARRAY ? aud->child : NULL; a;
         a = a->next) {
        if (a->type == JSON_STRING && strcmp(a->str, client_id) == 0 &&
            strlen(a->str) == a->str_len) {
            return 1;
        }
    }
    return 0;
}

/* The token's signature checked against the JWKS: 0, or -1 with why (and *no_key when no key of
 * the JWKS had the token's kid and kty). */
static int oidc_signature_check(const struct json_node *header, const char *jwt, size_t signed_len,
                                const unsigned char *sig, size_t sig_len, const char *jwks,
                                size_t jwks_len, int *no_key, char *why)
{
    const struct json_node *alg = json_get(header, "alg");
    const struct json_node *kid = json_get(header, "kid");
    struct json_doc *doc = NULL;
    struct al_error err;
    int rc = -1;
    int rsa = 0;
    *no_key = 0;
    /* the algorithm is ours to fix, never the token's to choose */
    if (alg && alg->type == JSON_STRING && strcmp(alg->str, "RS256") == 0) {
        rsa = 1;
    } else if (!alg || alg->type != JSON_STRING || strcmp(alg->str, "ES256") != 0) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's alg is not RS256 or ES256");
        return -1;
    }
    if (json_get(header, "crit")) {
        snprintf(why, OIDC_WHY_MAX, "the ID token has critical header parameters");
        return -1;
    }
    if (kid && kid->type != JSON_STRING) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's kid is not a string");
        return -1;
    }
    memset(&err, 0, sizeof err);
    const struct json_node *keys = NULL;
    if (jwks && json_parse(jwks, jwks_len, 8, &doc, &err) == AL_OK) {
        keys = json_get(json_root(doc), "keys");
    }
    if (!keys || keys->type != JSON_ARRAY) {
        snprintf(why, OIDC_WHY_MAX, "the provider's JWKS is malformed");
        *no_key = 1;
        goto out;
    }
    int tried = 0;
    for (const struct json_node *k = keys->child; k && rc != 0; k = k->next) {
        const struct json_node *kty = json_get(k, "kty");
        const struct json_node *kkid = json_get(k, "kid");
        const struct json_node *use = json_get(k, "use");
        const struct json_node *kalg = json_get(k, "alg");
        if (k->type != JSON_OBJECT || !kty || kty->type != JSON_STRING ||
            strcmp(kty->str, rsa ? "RSA" : "EC") != 0 ||
            (use && (use->type != JSON_STRING || strcmp(use->str, "sig") != 0)) ||
            (kalg && (kalg->type != JSON_STRING || strcmp(kalg->str, alg->str) != 0)) ||
            (kid && (!kkid || kkid->type != JSON_STRING || strcmp(kkid->str, kid->str) != 0))) {
            continue;
        }
        EVP_PKEY *key = oidc_jwk_key(k, rsa);
        if (key) {
            tried = 1;
            rc = oidc_sig_ok(key, rsa, jwt, signed_len, sig, sig_len) ? 0 : -1;
            EVP_PKEY_free(key);
        }
    }
    if (rc != 0) {
        *no_key = !tried;
        snprintf(why, OIDC_WHY_MAX,
                 tried ? "the ID token's signature does not verify"
                       : "no key of the provider's JWKS fits the ID token");
    }
out:
    json_doc_free(doc);
    return rc;
}

/* The claims' checks (the signature verified): 0, or -1 with why. */
static int oidc_claims_check(const struct json_node *c, const struct oidc_expect *e,
                             struct oidc_claims *ret, char *why)
{
    const struct json_node *iss = json_get(c, "iss");
    const struct json_node *azp = json_get(c, "azp");
    const struct json_node *exp = json_get(c, "exp");
    const struct json_node *iat = json_get(c, "iat");
    const struct json_node *nonce = json_get(c, "nonce");
    const struct json_node *who = json_get(c, e->principal_claim);
    if (c->type != JSON_OBJECT) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's claims are not an object");
        return -1;
    }
    if (!iss || iss->type != JSON_STRING || strlen(iss->str) != iss->str_len ||
        strcmp(iss->str, e->issuer) != 0) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's iss is not the issuer");
        return -1;
    }
    const struct json_node *aud = json_get(c, "aud");
    if (!oidc_aud_ok(aud, e->client_id) ||
        (azp && (azp->type != JSON_STRING || strlen(azp->str) != azp->str_len ||
                 strcmp(azp->str, e->client_id) != 0))) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's aud is not this client");
        return -1;
    }
    /* a token for several audiences must name the one it was issued to (OpenID Connect Core
     * 3.1.3.7): any of the others could otherwise hand its token on to us */
    if (aud->type == JSON_ARRAY && aud->count > 1 && !azp) {
        snprintf(why, OIDC_WHY_MAX, "the ID token is for several audiences and names no azp");
        return -1;
    }
    if (!exp || exp->type != JSON_NUMBER || exp->num + OIDC_LEEWAY_S < (double)e->now_s) {
        snprintf(why, OIDC_WHY_MAX, "the ID token has expired");
        return -1;
    }
    if (iat && (iat->type != JSON_NUMBER || iat->num > (double)(e->now_s + OIDC_LEEWAY_S))) {
        snprintf(why, OIDC_WHY_MAX, "the ID token was issued in the future");
        return -1;
    }
    if (!nonce || nonce->type != JSON_STRING || nonce->str_len != strlen(e->nonce) ||
        CRYPTO_memcmp(nonce->str, e->nonce, nonce->str_len) != 0) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's nonce is not this sign-in's");
        return -1;
    }
    memset(ret, 0, sizeof *ret);
    if (oidc_text(who, ret->identity, sizeof ret->identity) != 0) {
        snprintf(why, OIDC_WHY_MAX, "the ID token has no string claim %.64s", e->principal_claim);
        return -1;
    }
    /* an e-mail address names a person once the provider has verified it: one typed into a
     * profile at the provider (some let anyone set theirs) would sign its typist in as its owner */
    const struct json_node *verified = json_get(c, "email_verified");
    if (strcmp(e->principal_claim, "email") == 0 &&
        !(verified && (verified->type == JSON_TRUE ||
                       (verified->type == JSON_STRING && strcmp(verified->str, "true") == 0)))) {
        snprintf(why, OIDC_WHY_MAX, "the ID token's email is not verified (email_verified)");
        return -1;
    }
    const struct json_node *groups =
            e->groups_claim && e->groups_claim[0] ? json_get(c, e->groups_claim) : NULL;
    for (const struct json_node *g = groups && groups->type == JSON_ARRAY ? groups->child : NULL;
         g && ret->ngroups < OIDC_GROUPS_MAX; g = g->next) {
        if (oidc_text(g, ret->groups[ret->ngroups], sizeof ret->groups[0]) == 0) {
            ret->ngroups++;
        }
    }
    return 0;
}

int oidc_id_token_verify(const char *jwt, size_t len, const char *jwks, size_t jwks_len,
                         const struct oidc_expect *e, struct oidc_claims *ret, int *ret_no_key,
                         char *why)
{
    const char *dot1 = len <= OIDC_JWT_MAX ? memchr(jwt, '.', len) : NULL;
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - jwt)) : NULL;
    unsigned char *header = NULL;
    unsigned char *payload = NULL;
    unsigned char *sig = NULL;
    size_t hlen = 0;
    size_t plen = 0;
    size_t slen = 0;
    struct json_doc *hdoc = NULL;
    struct json_doc *pdoc = NULL;
    struct al_error err;
    int no_key = 0;
    int rc = -1;
    memset(&err, 0, sizeof err);
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - jwt))) {
        snprintf(why, OIDC_WHY_MAX, "the ID token is not a compact JWS");
        goto out;
    }
    header = oidc_b64url_decode(jwt, (size_t)(dot1 - jwt), &hlen);
    payload = oidc_b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &plen);
    sig = oidc_b64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - jwt), &slen);
    if (!header || !payload || !sig ||
        json_parse((const char *)header, hlen, 4, &hdoc, &err) != AL_OK ||
        json_root(hdoc)->type != JSON_OBJECT ||
        json_parse((const char *)payload, plen, 8, &pdoc, &err) != AL_OK) {
        snprintf(why, OIDC_WHY_MAX, "the ID token is malformed");
        goto out;
    }
    if (oidc_signature_check(json_root(hdoc), jwt, (size_t)(dot2 - jwt), sig, slen, jwks, jwks_len,
                             &no_key, why) != 0) {
        goto out;
    }
    rc = oidc_claims_check(json_root(pdoc), e, ret, why);
out:
    if (ret_no_key) {
        *ret_no_key = no_key;
    }
    json_doc_free(hdoc);
    json_doc_free(pdoc);
    free(header);
    free(payload);
    free(sig);
    return rc;
}

/* ---------------------------------------------------------------- the provider */

struct oidc_provider *oidc_provider_new(const struct oidc_config *cfg)
{
    struct oidc_provider *p = calloc(1, sizeof *p);
    if (p) {
        p->cfg = cfg;
        pthread_mutex_init(&p->lock, NULL);
    }
    return p;
}

void oidc_provider_free(struct oidc_provider *p)
{
    if (p) {
        pthread_mutex_destroy(&p->lock);
        free(p->jwks);
        free(p);
    }
}

static size_t oidc_write(char *data, size_t size, size_t n, void *userdata)
{
    struct buf *b = userdata;
    return buf_append(b, data, size * n) == BUF_OK ? size * n : 0;
}

/* GETs url (or POSTs form with a Basic authorization) into out: 0 for a 200, -1 with why. */
static int oidc_fetch(const char *url, const char *form, const char *basic, struct buf *out,
                      char *why)
{
    CURL *e = curl_easy_init();
    struct curl_slist *headers = NULL;
    char auth[OIDC_SECRET_MAX * 3];
    long status = 0;
    int rc = -1;
    if (!e) {
        snprintf(why, OIDC_WHY_MAX, "out of memory");
        return -1;
    }
    if (!oidc_url_ok(url)) {
        snprintf(why, OIDC_WHY_MAX, "the provider's endpoint is not https:// (or loopback)");
        goto out;
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    if (basic) {
        snprintf(auth, sizeof auth, "Authorization: Basic %s", basic);
        headers = curl_slist_append(headers, auth);
        OPENSSL_cleanse(auth, sizeof auth);
    }
    int bad = !headers;
    bad |= curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, OIDC_FETCH_TIMEOUT) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "airlockd") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, oidc_write) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, out) != CURLE_OK;
    if (form) {
        bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, form) != CURLE_OK;
    }
    if (bad) {
        snprintf(why, OIDC_WHY_MAX, "cannot set up the request to the provider");
        goto out;
    }
    CURLcode cc = curl_easy_perform(e);
    (void)curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK || status != 200 || buf_failed(out) || !out->data) {
        snprintf(why, OIDC_WHY_MAX, "the provider's %s answered %ld (%s)",
                 form ? "token endpoint" : "endpoint", status, curl_easy_strerror(cc));
        goto out;
    }
    rc = 0;
out:
    curl_slist_free_all(headers);
    curl_easy_cleanup(e);
    return rc;
}

static int oidc_endpoint(const struct json_node *root, const char *name, char *out, char *why)
{
    if (oidc_text(json_get(root, name), out, OIDC_URL_MAX + 1) != 0 || !oidc_url_ok(out)) {
        snprintf(why, OIDC_WHY_MAX, "the provider's discovery has no usable %s", name);
        return -1;
    }
    return 0;
}

/* Discovery, once: the endpoints into p. */
static int oidc_discover(struct oidc_provider *p, char *why)
{
    char url[OIDC_URL_MAX + 64];
    struct buf body;
    struct json_doc *doc = NULL;
    struct al_error err;
    char authz[OIDC_URL_MAX + 1];
    char token[OIDC_URL_MAX + 1];
    char jwks[OIDC_URL_MAX + 1];
    int rc = -1;
    pthread_mutex_lock(&p->lock);
    int done = p->discovered;
    pthread_mutex_unlock(&p->lock);
    if (done) {
        return 0;
    }
    memset(&err, 0, sizeof err);
    buf_init(&body, OIDC_FETCH_MAX);
    snprintf(url, sizeof url, "%s/.well-known/openid-configuration", p->cfg->issuer);
    if (oidc_fetch(url, NULL, NULL, &body, why) != 0) {
        goto out;
    }
    if (json_parse(body.data, body.len, 8, &doc, &err) != AL_OK) {
        snprintf(why, OIDC_WHY_MAX, "the provider's discovery is not JSON");
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *iss = json_get(root, "issuer");
    if (!iss || iss->type != JSON_STRING || strcmp(iss->str, p->cfg->issuer) != 0) {
        snprintf(why, OIDC_WHY_MAX, "the provider's discovery names another issuer");
        goto out;
    }
    if (oidc_endpoint(root, "authorization_endpoint", authz, why) != 0 ||
        oidc_endpoint(root, "token_endpoint", token, why) != 0 ||
        oidc_endpoint(root, "jwks_uri", jwks, why) != 0) {
        goto out;
    }
    pthread_mutex_lock(&p->lock);
    memcpy(p->authorization_endpoint, authz, sizeof authz);
    memcpy(p->token_endpoint, token, sizeof token);
    memcpy(p->jwks_uri, jwks, sizeof jwks);
    p->discovered = 1;
    pthread_mutex_unlock(&p->lock);
    rc = 0;
out:
    json_doc_free(doc);
    buf_done(&body);
    return rc;
}

/* Fetches the JWKS again into p. */
static int oidc_jwks_fetch(struct oidc_provider *p, char *why)
{
    char url[OIDC_URL_MAX + 1];
    struct buf body;
    buf_init(&body, OIDC_FETCH_MAX);
    pthread_mutex_lock(&p->lock);
    memcpy(url, p->jwks_uri, sizeof url);
    pthread_mutex_unlock(&p->lock);
    if (oidc_fetch(url, NULL, NULL, &body, why) != 0) {
        buf_done(&body);
        return -1;
    }
    size_t len = 0;
    char *text = buf_steal(&body, &len);
    pthread_mutex_lock(&p->lock);
    free(p->jwks);
    p->jwks = text;
    p->jwks_len = len;
    pthread_mutex_unlock(&p->lock);
    buf_done(&body);
    return 0;
}

/* Appends name=value (value percent-encoded) to the buffer, & first unless it is empty: 0, or
 * -1 when out of memory. */
static int oidc_param(struct buf *b, CURL *e, const char *name, const char *value)
{
    char *v = curl_easy_escape(e, value, 0);
    enum buf_status st = v ? buf_printf(b, "%s%s=%s", b->len ? "&" : "", name, v) : BUF_NO_MEMORY;
    curl_free(v);
    return st == BUF_OK ? 0 : -1;
}

int oidc_authorize_url(struct oidc_provider *p, const struct oidc_login *login,
                       char ret[OIDC_URL_MAX * 2], char *why)
{
    char challenge[OIDC_RANDOM_LEN + 1];
    struct buf q;
    CURL *e = curl_easy_init();
    int rc = -1;
    buf_init(&q, OIDC_URL_MAX);
    if (!e || oidc_discover(p, why) != 0) {
        goto out;
    }
    oidc_challenge(login->verifier, challenge);
    int bad = oidc_param(&q, e, "response_type", "code");
    bad |= oidc_param(&q, e, "client_id", p->cfg->client_id);
    bad |= oidc_param(&q, e, "redirect_uri", p->cfg->redirect_url);
    bad |= oidc_param(&q, e, "scope", "openid profile email");
    bad |= oidc_param(&q, e, "state", login->state);
    bad |= oidc_param(&q, e, "nonce", login->nonce);
    bad |= oidc_param(&q, e, "code_challenge", challenge);
    bad |= oidc_param(&q, e, "code_challenge_method", "S256");
    pthread_mutex_lock(&p->lock);
    int n = snprintf(ret, OIDC_URL_MAX * 2, "%s%c%s", p->authorization_endpoint,
                     strchr(p->authorization_endpoint, '?') ? '&' : '?', q.data ? q.data : "");
    pthread_mutex_unlock(&p->lock);
    if (bad || n < 0 || n >= OIDC_URL_MAX * 2) {
        snprintf(why, OIDC_WHY_MAX, "the authorization URL is too long");
        goto out;
    }
    rc = 0;
out:
    buf_done(&q);
    curl_easy_cleanup(e);
    return rc;
}

/* The ID token of the token endpoint's answer to `code`, into *ret (malloc'd), or -1 with why. */
static int oidc_exchange(struct oidc_provider *p, const char *code, const char *verifier,
                         char **ret, char *why)
{
    struct buf form;
    struct buf answer;
    struct buf basic;
    struct json_doc *doc = NULL;
    struct al_error err;
    char token_url[OIDC_URL_MAX + 1];
    unsigned char *b64 = NULL;
    CURL *e = curl_easy_init();
    int rc = -1;
    memset(&err, 0, sizeof err);
    buf_init(&form, 3 * OIDC_URL_MAX + 4096);
    buf_init(&answer, OIDC_FETCH_MAX);
    buf_init(&basic, 3 * (OIDC_TEXT_MAX + OIDC_SECRET_MAX) + 2);
    if (!e) {
        snprintf(why, OIDC_WHY_MAX, "out of memory");
        goto out;
    }
    int bad = oidc_param(&form, e, "grant_type", "authorization_code");
    bad |= oidc_param(&form, e, "code", code);
    bad |= oidc_param(&form, e, "redirect_uri", p->cfg->redirect_url);
    bad |= oidc_param(&form, e, "code_verifier", verifier);
    /* client_secret_basic (RFC 6749 2.3.1): id and secret form-encoded, then Base64 */
    char *id = curl_easy_escape(e, p->cfg->client_id, 0);
    char *secret = curl_easy_escape(e, p->cfg->client_secret, 0);
    buf_printf(&basic, "%s:%s", id ? id : "", secret ? secret : "");
    int escaped = id && secret;
    curl_free(id);
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
    }
    curl_free(secret);
    if (bad || !escaped || buf_failed(&basic)) {
        snprintf(why, OIDC_WHY_MAX, "out of memory");
        goto out;
    }
    b64 = malloc(4 * (basic.len / 3 + 1) + 1);
    if (!b64) {
        snprintf(why, OIDC_WHY_MAX, "out of memory");
        goto out;
    }
    EVP_EncodeBlock(b64, (const unsigned char *)basic.data, (int)basic.len);
    pthread_mutex_lock(&p->lock);
    memcpy(token_url, p->token_endpoint, sizeof token_url);
    pthread_mutex_unlock(&p->lock);
    if (oidc_fetch(token_url, form.data, (const char *)b64, &answer, why) != 0) {
        goto out;
    }
    const struct json_node *idt = NULL;
    if (json_parse(answer.data, answer.len, 8, &doc, &err) == AL_OK) {
        idt = json_get(json_root(doc), "id_token");
    }
    if (!idt || idt->type != JSON_STRING || idt->str_len > OIDC_JWT_MAX) {
        snprintf(why, OIDC_WHY_MAX, "the token endpoint's answer has no id_token");
        goto out;
    }
    *ret = buf_dup(idt->str, idt->str_len);
    rc = *ret ? 0 : -1;
out:
    json_doc_free(doc);
    if (b64) {
        OPENSSL_cleanse(b64, strlen((char *)b64));
    }
    free(b64);
    if (basic.data) {
        OPENSSL_cleanse(basic.data, basic.len);
    }
    buf_done(&basic);
    buf_done(&form);
    buf_done(&answer);
    curl_easy_cleanup(e);
    return rc;
}

/* Verifies jwt with the JWKS p holds now. */
static int oidc_verify_held(struct oidc_provider *p, const char *jwt, const struct oidc_expect *e,
                            struct oidc_claims *ret, int *no_key, char *why)
{
    pthread_mutex_lock(&p->lock);
    char *jwks = p->jwks ? buf_dup(p->jwks, p->jwks_len) : NULL;
    size_t jwks_len = p->jwks_len;
    pthread_mutex_unlock(&p->lock);
    int rc = oidc_id_token_verify(jwt, strlen(jwt), jwks, jwks_len, e, ret, no_key, why);
    free(jwks);
    return rc;
}

int oidc_sign_in(struct oidc_provider *p, const char *code, const struct oidc_login *login,
                 int64_t now_s, struct oidc_claims *ret, char *why)
{
    char *jwt = NULL;
    int no_key = 0;
    int rc = -1;
    struct oidc_expect e = { p->cfg->issuer,          p->cfg->client_id,    login->nonce,
                             p->cfg->principal_claim, p->cfg->groups_claim, now_s };
    if (oidc_discover(p, why) != 0 || oidc_exchange(p, code, login->verifier, &jwt, why) != 0) {
        goto out;
    }
    rc = oidc_verify_held(p, jwt, &e, ret, &no_key, why);
    /* a key the provider added (a rotation), or the first sign-in: the JWKS once more */
    if (rc != 0 && no_key) {
        rc = oidc_jwks_fetch(p, why) == 0 ? oidc_verify_held(p, jwt, &e, ret, &no_key, why) : -1;
    }
out:
    free(jwt);
    return rc;
}
