/* unit.continuation - the signed continuation token (src/lib/continuation.c): what is encoded
 * decodes to the same continuation; a changed byte, a foreign key, a wrong prefix or an
 * oversized token is refused; rotated keys still verify while listed; interruption ids
 * round-trip through hex. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continuation.h"

static uint8_t key_a_bytes[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static uint8_t key_b_bytes[32] = { 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba,
                                   0xbb, 0xbc, 0xbd, 0xbe, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5,
                                   0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf };
static const struct cont_key key_a = { key_a_bytes, sizeof key_a_bytes };
static const struct cont_key key_b = { key_b_bytes, sizeof key_b_bytes };

static char fn_get[] = "db.get";
static char fn_ask[] = "approve.ask";
static char pay_get[] = "{\"id\":7}";
static char pay_ask[] = "{\"q\":\"ship?\"}";

static void sample(struct continuation *c, struct cont_entry e[2])
{
    memset(c, 0, sizeof *c);
    cont_sha256("return 1", 8, c->source);
    memset(c->manifest, 0x22, sizeof c->manifest);
    memset(c->context, 0x33, sizeof c->context);
    snprintf(c->audience, sizeof c->audience, "orders");
    c->issued_ms = 1700000000000;
    c->expires_ms = 1700000600000;
    memset(c->nonce, 0x44, sizeof c->nonce);
    c->seed = 0x0123456789abcdefULL;
    c->clock_ms = 1700000000123;
    memset(e, 0, 2 * sizeof *e);
    e[0] = (struct cont_entry){ .id = 1,
                                .kind = CONT_VALUE,
                                .fn = fn_get,
                                .settle = 0, /* the first (only) answered async call */
                                .clock_ms = 1700000000200,
                                .payload = pay_get,
                                .len = strlen(pay_get) };
    e[1] = (struct cont_entry){
        .id = 2, .kind = CONT_INTERRUPTED, .fn = fn_ask, .payload = pay_ask, .len = strlen(pay_ask)
    };
    memset(e[0].args_digest, 0x55, CONT_DIGEST);
    memset(e[1].args_digest, 0x66, CONT_DIGEST);
    memset(e[1].iid, 0xa5, CONT_IID);
    c->entries = e;
    c->nentries = 2;
}

static char *encode(const struct continuation *c, const struct cont_key *key, size_t *ret_len)
{
    char *token = NULL;
    struct al_error err;
    assert_int_equal(cont_encode(c, key, SIZE_MAX, &token, ret_len, &err), AL_OK);
    assert_non_null(token);
    assert_int_equal(strlen(token), *ret_len);
    assert_memory_equal(token, CONT_PREFIX, strlen(CONT_PREFIX));
    return token;
}

static enum al_code decode(const char *token, size_t len, const struct cont_key *keys, size_t nkeys,
                           struct continuation *out)
{
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code rc = cont_decode(token, len, keys, nkeys, SIZE_MAX, out, &err);
    if (rc != AL_OK) {
        assert_true(err.message[0] != '\0');
    }
    return rc;
}

/* A call answered with a TypeError keeps that kind (its replay throws a TypeError again); a
 * kind this build does not know is refused, though the token is signed. */
static void test_continuation_type_error_kind(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    e[0].kind = CONT_THROW_TYPE;
    size_t len = 0;
    char *token = encode(&c, &key_a, &len);
    struct continuation d;
    assert_int_equal(decode(token, len, &key_a, 1, &d), AL_OK);
    assert_int_equal(d.entries[0].kind, CONT_THROW_TYPE);
    assert_string_equal(d.entries[0].payload, pay_get);
    cont_free(&d);
    free(token);
    e[0].kind = CONT_THROW_TYPE + 1;
    token = encode(&c, &key_a, &len);
    assert_int_not_equal(decode(token, len, &key_a, 1, &d), AL_OK);
    free(token);
}

static void test_continuation_round_trip(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    size_t len = 0;
    char *token = encode(&c, &key_a, &len);
    struct continuation d;
    assert_int_equal(decode(token, len, &key_a, 1, &d), AL_OK);
    assert_memory_equal(d.source, c.source, CONT_DIGEST);
    assert_memory_equal(d.manifest, c.manifest, CONT_DIGEST);
    assert_memory_equal(d.context, c.context, CONT_DIGEST);
    assert_string_equal(d.audience, "orders");
    assert_int_equal(d.issued_ms, c.issued_ms);
    assert_int_equal(d.expires_ms, c.expires_ms);
    assert_memory_equal(d.nonce, c.nonce, CONT_NONCE);
    assert_int_equal(d.seed, c.seed);
    assert_int_equal(d.clock_ms, c.clock_ms);
    assert_int_equal(d.nentries, 2);
    assert_int_equal(d.entries[0].id, 1);
    assert_int_equal(d.entries[0].kind, CONT_VALUE);
    assert_string_equal(d.entries[0].fn, "db.get");
    assert_int_equal(d.entries[0].settle, 0);
    assert_int_equal(d.entries[0].clock_ms, 1700000000200);
    assert_string_equal(d.entries[0].payload, pay_get);
    assert_memory_equal(d.entries[0].args_digest, e[0].args_digest, CONT_DIGEST);
    assert_int_equal(d.entries[1].kind, CONT_INTERRUPTED);
    assert_string_equal(d.entries[1].fn, "approve.ask");
    assert_memory_equal(d.entries[1].iid, e[1].iid, CONT_IID);
    assert_string_equal(d.entries[1].payload, pay_ask);
    cont_free(&d);
    free(token);
}

static void test_continuation_every_changed_byte_is_refused(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    size_t len = 0;
    char *token = encode(&c, &key_a, &len);
    char *t = malloc(len + 1);
    assert_non_null(t);
    for (size_t i = 0; i < len; i++) {
        memcpy(t, token, len + 1);
        /* another base64url character, or another prefix character */
        t[i] = t[i] == 'A' ? 'B' : 'A';
        struct continuation d;
        assert_int_equal(decode(t, len, &key_a, 1, &d), AL_PROTOCOL_ERROR);
        cont_free(&d);
    }
    /* cut short, or with a byte added */
    struct continuation d;
    assert_int_equal(decode(token, len - 1, &key_a, 1, &d), AL_PROTOCOL_ERROR);
    cont_free(&d);
    memcpy(t, token, len + 1);
    t = realloc(t, len + 2);
    assert_non_null(t);
    t[len] = 'A';
    t[len + 1] = '\0';
    assert_int_equal(decode(t, len + 1, &key_a, 1, &d), AL_PROTOCOL_ERROR);
    cont_free(&d);
    free(t);
    free(token);
}

static void test_continuation_foreign_key_is_refused(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    size_t len = 0;
    char *token = encode(&c, &key_a, &len);
    struct continuation d;
    assert_int_equal(decode(token, len, &key_b, 1, &d), AL_PROTOCOL_ERROR);
    cont_free(&d);
    free(token);
}

static void test_continuation_key_rotation(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    size_t len = 0;
    /* issued under the old key a; the new key b now signs, a still verifies */
    char *old = encode(&c, &key_a, &len);
    struct cont_key both[2] = { key_b, key_a };
    struct continuation d;
    assert_int_equal(decode(old, len, both, 2, &d), AL_OK);
    assert_int_equal(d.seed, c.seed);
    cont_free(&d);
    size_t nlen = 0;
    char *fresh = encode(&c, &both[0], &nlen);
    assert_int_equal(decode(fresh, nlen, both, 2, &d), AL_OK);
    cont_free(&d);
    /* a is retired: its tokens stop verifying, b's keep working */
    assert_int_equal(decode(old, len, &key_b, 1, &d), AL_PROTOCOL_ERROR);
    cont_free(&d);
    assert_int_equal(decode(fresh, nlen, &key_b, 1, &d), AL_OK);
    cont_free(&d);
    /* no key at all verifies nothing */
    assert_int_equal(decode(fresh, nlen, NULL, 0, &d), AL_PROTOCOL_ERROR);
    cont_free(&d);
    free(old);
    free(fresh);
}

static void test_continuation_size_limits(void **state)
{
    (void)state;
    struct continuation c;
    struct cont_entry e[2];
    sample(&c, e);
    size_t len = 0;
    char *token = encode(&c, &key_a, &len);
    struct al_error err;
    char *t = NULL;
    size_t tlen = 0;
    /* encode: a limit of exactly the token's size passes, one byte less fails */
    assert_int_equal(cont_encode(&c, &key_a, len, &t, &tlen, &err), AL_OK);
    free(t);
    t = NULL;
    assert_int_equal(cont_encode(&c, &key_a, len - 1, &t, &tlen, &err), AL_OUTPUT_LIMIT);
    assert_null(t);
    /* decode: a token above the limit is refused before anything else */
    struct continuation d;
    assert_int_equal(cont_decode(token, len, &key_a, 1, len, &d, &err), AL_OK);
    cont_free(&d);
    assert_int_equal(cont_decode(token, len, &key_a, 1, len - 1, &d, &err), AL_PROTOCOL_ERROR);
    cont_free(&d);
    free(token);
}

static void test_continuation_not_a_token(void **state)
{
    (void)state;
    static const char *const junk[] = {
        "", "alc1.", "alc2.AAAA", "hello", "alc1.!!!!", "alc1.AAAA="
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        struct continuation d;
        assert_int_equal(decode(junk[i], strlen(junk[i]), &key_a, 1, &d), AL_PROTOCOL_ERROR);
        cont_free(&d);
    }
}

static void test_continuation_iid_hex(void **state)
{
    (void)state;
    uint8_t iid[CONT_IID];
    for (size_t i = 0; i < CONT_IID; i++) {
        iid[i] = (uint8_t)(i * 17 + 3);
    }
    char hex[CONT_IID_HEX + 1];
    cont_iid_hex(iid, hex);
    assert_int_equal(strlen(hex), CONT_IID_HEX);
    uint8_t back[CONT_IID];
    assert_int_equal(cont_iid_parse(hex, back), 0);
    assert_memory_equal(back, iid, CONT_IID);
    assert_int_equal(cont_iid_parse("0123", back), -1);
    assert_int_equal(cont_iid_parse("zz0102030405060708090a0b0c0d0e0f", back), -1);
    assert_int_equal(cont_iid_parse("000102030405060708090a0b0c0d0e0f00", back), -1);
}

static void test_continuation_random_nonces_differ(void **state)
{
    (void)state;
    uint8_t a[CONT_NONCE];
    uint8_t b[CONT_NONCE];
    assert_int_equal(cont_random(a, sizeof a), 0);
    assert_int_equal(cont_random(b, sizeof b), 0);
    assert_memory_not_equal(a, b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_continuation_round_trip),
        cmocka_unit_test(test_continuation_type_error_kind),
        cmocka_unit_test(test_continuation_every_changed_byte_is_refused),
        cmocka_unit_test(test_continuation_foreign_key_is_refused),
        cmocka_unit_test(test_continuation_key_rotation),
        cmocka_unit_test(test_continuation_size_limits),
        cmocka_unit_test(test_continuation_not_a_token),
        cmocka_unit_test(test_continuation_iid_hex),
        cmocka_unit_test(test_continuation_random_nonces_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
