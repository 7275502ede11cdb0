/*
 * test_oidc.c - the ID token's checks (oidc.h) with tokens this test signs: a good RS256 and
 * ES256 token verifies; alg "none", a MAC, another key, a tampered payload, another audience or
 * issuer, an expired token and another nonce are each refused. Also the login cookie's seal, the
 * loopback rule for http:// issuers and the Cookie header's parsing (session.h).
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oidc.h"
#include "session.h"

#define NOW 1800000000LL

static EVP_PKEY *rsa_key;
static EVP_PKEY *rsa_other;
static EVP_PKEY *ec_key;
static char jwks[8192];

static void b64(const unsigned char *in, size_t n, char *out)
{
    oidc_b64url(in, n, out);
}

static void bn_b64(EVP_PKEY *k, const char *name, char *out)
{
    BIGNUM *bn = NULL;
    unsigned char raw[512];
    assert_int_equal(EVP_PKEY_get_bn_param(k, name, &bn), 1);
    int n = BN_bn2bin(bn, raw);
    b64(raw, (size_t)n, out);
    BN_free(bn);
}

static int setup(void **state)
{
    (void)state;
    rsa_key = EVP_RSA_gen(2048);
    rsa_other = EVP_RSA_gen(2048);
    ec_key = EVP_EC_gen("P-256");
    assert_non_null(rsa_key);
    assert_non_null(rsa_other);
    assert_non_null(ec_key);
    char n[700];
    char e[16];
    unsigned char pub[65];
    size_t publen = 0;
    char x[64];
    char y[64];
    bn_b64(rsa_key, OSSL_PKEY_PARAM_RSA_N, n);
    bn_b64(rsa_key, OSSL_PKEY_PARAM_RSA_E, e);
    assert_int_equal(EVP_PKEY_get_octet_string_param(ec_key, OSSL_PKEY_PARAM_PUB_KEY, pub,
                                                     sizeof pub, &publen),
                     1);
    assert_int_equal(publen, 65);
    b64(pub + 1, 32, x);
    b64(pub + 33, 32, y);
    snprintf(jwks, sizeof jwks,
             "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r1\",\"use\":\"sig\",\"alg\":\"RS256\","
             "\"n\":\"%s\",\"e\":\"%s\"},{\"kty\":\"EC\",\"kid\":\"e1\",\"crv\":\"P-256\","
             "\"x\":\"%s\",\"y\":\"%s\"}]}",
             n, e, x, y);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(rsa_key);
    EVP_PKEY_free(rsa_other);
    EVP_PKEY_free(ec_key);
    return 0;
}

/* A compact JWS of header and payload (JSON texts) signed by key under alg: "RS256", "ES256",
 * "none" (no signature) or "HS256" (a MAC keyed with the JWKS's text, as an attacker would). */
static char *sign(const char *alg, EVP_PKEY *key, const char *header, const char *payload)
{
    static char out[16384];
    char h[2048];
    char p[4096];
    b64((const unsigned char *)header, strlen(header), h);
    b64((const unsigned char *)payload, strlen(payload), p);
    int n = snprintf(out, sizeof out, "%s.%s", h, p);
    unsigned char sig[512];
    size_t siglen = sizeof sig;
    if (strcmp(alg, "none") == 0) {
        siglen = 0;
    } else if (strcmp(alg, "HS256") == 0) {
        unsigned int len = 0;
        HMAC(EVP_sha256(), jwks, (int)strlen(jwks), (const unsigned char *)out, (size_t)n, sig,
             &len);
        siglen = len;
    } else {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned char der[128];
        size_t derlen = sizeof der;
        int ec = strcmp(alg, "ES256") == 0;
        assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key), 1);
        assert_int_equal(EVP_DigestSign(md, ec ? der : sig, ec ? &derlen : &siglen,
                                        (const unsigned char *)out, (size_t)n),
                         1);
        EVP_MD_CTX_free(md);
        if (ec) { /* DER to JOSE's r||s */
            const unsigned char *d = der;
            ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &d, (long)derlen);
            assert_non_null(es);
            BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32);
            BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32);
            ECDSA_SIG_free(es);
            siglen = 64;
        }
    }
    out[n++] = '.';
    b64(sig, siglen, out + n);
    return out;
}

static const char good_claims[] =
        "{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"sub\":\"u-1\","
        "\"email\":\"alice@example.com\",\"email_verified\":true,"
        "\"groups\":[\"finance-approvers\",\"all\"],"
        "\"nonce\":\"n-123\",\"iat\":1799999990,\"exp\":1800000300}";

static const struct oidc_expect expect = {
    "https://id.example.com", "airlock", "n-123", "email", "groups", NOW
};

static int verify(const char *jwt, struct oidc_claims *claims, char *why)
{
    return oidc_id_token_verify(jwt, strlen(jwt), jwks, strlen(jwks), &expect, claims, NULL, why);
}

static void test_oidc_id_token_rs256_verifies(void **state)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    (void)state;
    const char *jwt = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", good_claims);
    assert_int_equal(verify(jwt, &c, why), 0);
    assert_string_equal(c.identity, "alice@example.com");
    assert_int_equal(c.ngroups, 2);
    assert_string_equal(c.groups[0], "finance-approvers");
}

static void test_oidc_id_token_es256_verifies(void **state)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    (void)state;
    const char *jwt = sign("ES256", ec_key, "{\"alg\":\"ES256\",\"kid\":\"e1\"}", good_claims);
    assert_int_equal(verify(jwt, &c, why), 0);
    assert_string_equal(c.identity, "alice@example.com");
}

static void refused(const char *jwt, const char *reason)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    assert_int_equal(verify(jwt, &c, why), -1);
    if (!strstr(why, reason)) {
        fail_msg("refused for \"%s\", expected \"%s\"", why, reason);
    }
}

static void test_oidc_id_token_alg_none_refused(void **state)
{
    (void)state;
    refused(sign("none", NULL, "{\"alg\":\"none\"}", good_claims), "alg");
    refused(sign("none", NULL, "{\"alg\":\"none\",\"kid\":\"r1\"}", good_claims), "alg");
}

static void test_oidc_id_token_mac_refused(void **state)
{
    (void)state;
    /* HS256 keyed with public material: the algorithm is never the token's to choose */
    refused(sign("HS256", NULL, "{\"alg\":\"HS256\",\"kid\":\"r1\"}", good_claims), "alg");
}

static void test_oidc_id_token_wrong_key_refused(void **state)
{
    (void)state;
    refused(sign("RS256", rsa_other, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", good_claims),
            "signature does not verify");
    /* an ES256 header over an RSA key's signature */
    refused(sign("RS256", rsa_key, "{\"alg\":\"ES256\",\"kid\":\"e1\"}", good_claims),
            "signature does not verify");
}

static void test_oidc_id_token_tampered_payload_refused(void **state)
{
    char jwt[16384];
    char p[4096];
    (void)state;
    snprintf(jwt, sizeof jwt, "%s",
             sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", good_claims));
    const char *evil = "{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"sub\":\"u-1\","
                       "\"email\":\"admin@example.com\",\"nonce\":\"n-123\",\"exp\":1800000300}";
    b64((const unsigned char *)evil, strlen(evil), p);
    char *dot1 = strchr(jwt, '.');
    char *dot2 = strchr(dot1 + 1, '.');
    char tampered[16384];
    snprintf(tampered, sizeof tampered, "%.*s.%s%s", (int)(dot1 - jwt), jwt, p, dot2);
    refused(tampered, "signature does not verify");
}

static void test_oidc_id_token_unknown_kid_says_no_key(void **state)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    int no_key = 0;
    (void)state;
    const char *jwt = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r9\"}", good_claims);
    assert_int_equal(
            oidc_id_token_verify(jwt, strlen(jwt), jwks, strlen(jwks), &expect, &c, &no_key, why),
            -1);
    assert_int_equal(no_key, 1);
}

static void claims_refused(const char *claims, const char *reason)
{
    refused(sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", claims), reason);
}

static void test_oidc_id_token_wrong_audience_refused(void **state)
{
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"other\",\"email\":\"a@b\","
                   "\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "aud");
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":[\"other\",\"x\"],\"email\":"
                   "\"a@b\",\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "aud");
    /* in the audience, but issued to another party */
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":[\"airlock\",\"x\"],\"azp\":"
                   "\"x\",\"email\":\"a@b\",\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "aud");
}

/* A token for several audiences names the party it was issued to (OpenID Connect Core 3.1.3.7):
 * without azp, any of them may be the one that asked for it, and a client the provider trusts
 * less could hand its token to airlockd. */
static void test_oidc_id_token_several_audiences_need_azp(void **state)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":[\"airlock\",\"x\"],\"email\":"
                   "\"a@b\",\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "azp");
    const char *named = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
                             "{\"iss\":\"https://id.example.com\",\"aud\":[\"airlock\",\"x\"],"
                             "\"azp\":\"airlock\",\"email\":\"a@b\",\"email_verified\":true,"
                             "\"nonce\":\"n-123\","
                             "\"exp\":1800000300}");
    assert_int_equal(verify(named, &c, why), 0);
    const char *one = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
                           "{\"iss\":\"https://id.example.com\",\"aud\":[\"airlock\"],"
                           "\"email\":\"a@b\",\"email_verified\":true,\"nonce\":\"n-123\","
                           "\"exp\":1800000300}");
    assert_int_equal(verify(one, &c, why), 0);
    /* a NUL inside a claim is not where the string ends */
    claims_refused("{\"iss\":\"https://id.example.com\\u0000.evil\",\"aud\":\"airlock\","
                   "\"email\":\"a@b\",\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "iss");
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":[\"airlock\",\"x\"],\"azp\":"
                   "\"airlock\\u0000x\",\"email\":\"a@b\",\"nonce\":\"n-123\","
                   "\"exp\":1800000300}",
                   "aud");
}

/* An e-mail address the provider has not verified names nobody: at a provider that lets a
 * person type any address into their profile, an outsider would otherwise sign in as the admin
 * whose address they typed. */
static void test_oidc_id_token_unverified_email_refused(void **state)
{
    struct oidc_claims c;
    char why[OIDC_WHY_MAX] = "";
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":"
                   "\"alice@example.com\",\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "email_verified");
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":"
                   "\"alice@example.com\",\"email_verified\":false,\"nonce\":\"n-123\","
                   "\"exp\":1800000300}",
                   "email_verified");
    /* some providers send it as a string */
    const char *jwt = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
                           "{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":"
                           "\"alice@example.com\",\"email_verified\":\"true\",\"nonce\":"
                           "\"n-123\",\"exp\":1800000300}");
    assert_int_equal(verify(jwt, &c, why), 0);
    /* another principal claim needs no verified e-mail */
    struct oidc_expect by_sub = expect;
    by_sub.principal_claim = "sub";
    jwt = sign("RS256", rsa_key, "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
               "{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"sub\":\"u-1\","
               "\"nonce\":\"n-123\",\"exp\":1800000300}");
    assert_int_equal(
            oidc_id_token_verify(jwt, strlen(jwt), jwks, strlen(jwks), &by_sub, &c, NULL, why), 0);
    assert_string_equal(c.identity, "u-1");
}

static void test_oidc_id_token_wrong_issuer_refused(void **state)
{
    (void)state;
    claims_refused("{\"iss\":\"https://evil.example.com\",\"aud\":\"airlock\",\"email\":\"a@b\","
                   "\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "iss");
}

static void test_oidc_id_token_expired_refused(void **state)
{
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":\"a@b\","
                   "\"nonce\":\"n-123\",\"exp\":1799999900}",
                   "expired");
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":\"a@b\","
                   "\"nonce\":\"n-123\"}",
                   "expired");
}

static void test_oidc_id_token_nonce_mismatch_refused(void **state)
{
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":\"a@b\","
                   "\"nonce\":\"n-999\",\"exp\":1800000300}",
                   "nonce");
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"email\":\"a@b\","
                   "\"exp\":1800000300}",
                   "nonce");
}

static void test_oidc_id_token_missing_principal_claim_refused(void **state)
{
    (void)state;
    claims_refused("{\"iss\":\"https://id.example.com\",\"aud\":\"airlock\",\"sub\":\"u\","
                   "\"nonce\":\"n-123\",\"exp\":1800000300}",
                   "claim email");
}

static void test_oidc_login_cookie_sealed(void **state)
{
    unsigned char key[32] = { 1, 2, 3 };
    unsigned char other[32] = { 9 };
    struct oidc_login login;
    struct oidc_login back;
    char cookie[OIDC_COOKIE_VALUE_MAX + 1];
    char why[OIDC_WHY_MAX];
    (void)state;
    assert_int_equal(oidc_login_new(key, NOW, &login, cookie), 0);
    assert_int_equal(oidc_login_open(key, cookie, NOW + 1, &back, why), 0);
    assert_string_equal(back.state, login.state);
    assert_string_equal(back.nonce, login.nonce);
    assert_string_equal(back.verifier, login.verifier);
    assert_int_equal(oidc_login_open(other, cookie, NOW + 1, &back, why), -1);
    assert_int_equal(oidc_login_open(key, cookie, NOW + OIDC_LOGIN_TTL_S + 1, &back, why), -1);
    cookie[0] = cookie[0] == 'A' ? 'B' : 'A'; /* another state */
    assert_int_equal(oidc_login_open(key, cookie, NOW + 1, &back, why), -1);
}

static void test_oidc_pkce_challenge_is_s256(void **state)
{
    char c[OIDC_RANDOM_LEN + 1];
    (void)state;
    /* RFC 7636 appendix B */
    oidc_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", c);
    assert_string_equal(c, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

static void test_oidc_http_issuer_only_on_loopback(void **state)
{
    (void)state;
    assert_true(oidc_url_ok("https://id.example.com"));
    assert_true(oidc_url_ok("http://127.0.0.1:9000/oidc"));
    assert_true(oidc_url_ok("http://localhost:9000"));
    assert_true(oidc_url_ok("http://[::1]:9000"));
    assert_false(oidc_url_ok("http://id.example.com"));
    assert_false(oidc_url_ok("http://10.0.0.1:9000"));
    assert_false(oidc_url_ok("http://127.0.0.1.evil.com"));
    assert_false(oidc_url_ok("ftp://127.0.0.1"));
}

static void test_session_cookie_parsed(void **state)
{
    char v[65];
    (void)state;
    assert_int_equal(
            session_cookie_get("a=1; airlock_session=abc; b=2", "airlock_session", v, sizeof v), 0);
    assert_string_equal(v, "abc");
    assert_int_equal(session_cookie_get("xairlock_session=abc", "airlock_session", v, sizeof v),
                     -1);
    assert_int_equal(session_cookie_get(NULL, "airlock_session", v, sizeof v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oidc_id_token_rs256_verifies),
        cmocka_unit_test(test_oidc_id_token_es256_verifies),
        cmocka_unit_test(test_oidc_id_token_alg_none_refused),
        cmocka_unit_test(test_oidc_id_token_mac_refused),
        cmocka_unit_test(test_oidc_id_token_wrong_key_refused),
        cmocka_unit_test(test_oidc_id_token_tampered_payload_refused),
        cmocka_unit_test(test_oidc_id_token_unknown_kid_says_no_key),
        cmocka_unit_test(test_oidc_id_token_wrong_audience_refused),
        cmocka_unit_test(test_oidc_id_token_several_audiences_need_azp),
        cmocka_unit_test(test_oidc_id_token_unverified_email_refused),
        cmocka_unit_test(test_oidc_id_token_wrong_issuer_refused),
        cmocka_unit_test(test_oidc_id_token_expired_refused),
        cmocka_unit_test(test_oidc_id_token_nonce_mismatch_refused),
        cmocka_unit_test(test_oidc_id_token_missing_principal_claim_refused),
        cmocka_unit_test(test_oidc_login_cookie_sealed),
        cmocka_unit_test(test_oidc_pkce_challenge_is_s256),
        cmocka_unit_test(test_oidc_http_issuer_only_on_loopback),
        cmocka_unit_test(test_session_cookie_parsed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
