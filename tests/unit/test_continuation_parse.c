/*
 * unit.continuation_parse - the continuation body parser (src/lib/continuation.c): what cont_parse
 * accepts, cont_encode writes back and cont_decode accepts again, field for field; and the
 * bodies found by fuzz.continuation that once broke that promise.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "continuation.h"

static uint8_t key_bytes[32] = "unit-continuation-key-0123456789";
static const struct cont_key key = { key_bytes, sizeof key_bytes };

static void put_var(struct buf *b, uint64_t v)
{
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        assert_int_equal(buf_append_byte(b, byte | (v ? 0x80 : 0)), BUF_OK);
    } while (v);
}

static void put_fill(struct buf *b, uint8_t byte, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(buf_append_byte(b, byte), BUF_OK);
    }
}

/* Everything before the entry count, as docs/continuations.md lays it out. */
static void put_head(struct buf *b)
{
    assert_int_equal(buf_append_byte(b, CONT_VERSION), BUF_OK);
    assert_int_equal(buf_append_byte(b, CONT_FORM_TOKEN), BUF_OK);
    put_var(b, 0);                      /* no store id */
    put_fill(b, 0x11, CONT_DIGEST);     /* source */
    put_var(b, 0);                      /* source type: a JavaScript body */
    put_fill(b, 0x11, 2 * CONT_DIGEST); /* manifest, context */
    put_var(b, 7);
    assert_int_equal(buf_append(b, "airlock", 7), BUF_OK);
    put_var(b, 2 * 1000); /* issued: zigzag(1000) */
    put_var(b, 2 * 5000); /* expires */
    put_fill(b, 0x22, CONT_NONCE);
    put_fill(b, 0x33, 8); /* seed */
    put_var(b, 0);        /* clock */
}

/* A synchronous call answered with the value `n` (one digit). */
static void put_sync_entry(struct buf *b, uint64_t delta, char n)
{
    put_var(b, delta);
    assert_int_equal(buf_append_byte(b, CONT_VALUE | 0x80), BUF_OK);
    put_var(b, 5);
    assert_int_equal(buf_append(b, "h.get", 5), BUF_OK);
    put_fill(b, 0x44, CONT_DIGEST);
    put_var(b, 0); /* clock delta */
    put_var(b, 1);
    assert_int_equal(buf_append_byte(b, (uint8_t)n), BUF_OK);
}

/* What cont_parse accepts must survive cont_encode and cont_decode unchanged. */
static void expect_round_trip(const struct continuation *c)
{
    char *token = NULL;
    size_t len = 0;
    struct al_error err;
    assert_int_equal(cont_encode(c, &key, SIZE_MAX, &token, &len, &err), AL_OK);
    struct continuation back;
    if (cont_decode(token, len, &key, 1, SIZE_MAX, &back, &err) != AL_OK) {
        fail_msg("cont_decode refused cont_encode's token: %s", err.message);
    }
    assert_int_equal(back.nentries, c->nentries);
    for (size_t i = 0; i < c->nentries; i++) {
        assert_int_equal(back.entries[i].id, c->entries[i].id);
        assert_string_equal(back.entries[i].payload, c->entries[i].payload);
    }
    cont_free(&back);
    free(token);
}

static void test_parse_round_trip(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    put_head(&b);
    put_var(&b, 2);
    put_sync_entry(&b, 5, '1');
    put_sync_entry(&b, 3, '2');
    struct continuation c;
    assert_int_equal(cont_parse((const uint8_t *)b.data, b.len, &c), 0);
    assert_int_equal(c.nentries, 2);
    assert_int_equal(c.entries[0].id, 5);
    assert_int_equal(c.entries[1].id, 8);
    expect_round_trip(&c);
    cont_free(&c);
    buf_done(&b);
}

/* fuzz.continuation's crash-08d5eb81...: an id delta so large that adding it to the previous id
 * wrapped around 64 bits passed the "at most UINT32_MAX" check, and gave an id below the one
 * before it. cont_encode wrote that as a 32-bit difference the parser then refused. Ids must be
 * strictly ascending: the body is refused. */
static void test_parse_refuses_wrapping_id_delta(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    put_head(&b);
    put_var(&b, 2);
    put_sync_entry(&b, 5, '1');
    put_sync_entry(&b, UINT64_MAX - 2, '2'); /* 5 + that = 2 (mod 2^64) */
    struct continuation c;
    assert_int_equal(cont_parse((const uint8_t *)b.data, b.len, &c), -1);
    cont_free(&c);

    /* the largest delta that still fits is accepted, one more is not */
    buf_reset(&b);
    put_head(&b);
    put_var(&b, 2);
    put_sync_entry(&b, 5, '1');
    put_sync_entry(&b, UINT32_MAX - 5, '2');
    assert_int_equal(cont_parse((const uint8_t *)b.data, b.len, &c), 0);
    assert_int_equal(c.entries[1].id, UINT32_MAX);
    expect_round_trip(&c);
    cont_free(&c);

    buf_reset(&b);
    put_head(&b);
    put_var(&b, 2);
    put_sync_entry(&b, 5, '1');
    put_sync_entry(&b, UINT32_MAX - 4, '2');
    assert_int_equal(cont_parse((const uint8_t *)b.data, b.len, &c), -1);
    cont_free(&c);
    buf_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_round_trip),
        cmocka_unit_test(test_parse_refuses_wrapping_id_delta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
