/* unit.wire - frame building and bounds-checked parsing of the host/worker protocol. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <string.h>

#include "wire.h"

static void build_sample(struct buf *b)
{
    size_t start;
    assert_int_equal(wire_begin(b, WIRE_CALL, &start), BUF_OK);
    assert_int_equal(wire_u8(b, 7), BUF_OK);
    assert_int_equal(wire_u32(b, 0xdeadbeef), BUF_OK);
    assert_int_equal(wire_u64(b, 0x0123456789abcdefull), BUF_OK);
    assert_int_equal(wire_str(b, "héllo", strlen("héllo")), BUF_OK);
    wire_end(b, start);
}

static void test_frame_roundtrip(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    build_sample(&b);
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    assert_int_equal(wire_next(b.data, b.len, 1024, &type, &c, &flen), 1);
    assert_int_equal(type, WIRE_CALL);
    assert_int_equal(flen, b.len);
    assert_int_equal(wire_get_u8(&c), 7);
    assert_int_equal(wire_get_u32(&c), 0xdeadbeef);
    assert_true(wire_get_u64(&c) == 0x0123456789abcdefull);
    size_t len;
    const char *s = wire_get_str(&c, &len);
    assert_int_equal(len, strlen("héllo"));
    assert_memory_equal(s, "héllo", len);
    assert_int_equal(c.left, 0);
    assert_false(c.bad);
    buf_done(&b);
}

static void test_frame_needs_more_bytes(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    build_sample(&b);
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    for (size_t n = 0; n < b.len; n++) {
        assert_int_equal(wire_next(b.data, n, 1024, &type, &c, &flen), 0);
    }
    buf_done(&b);
}

static void test_frame_two_in_one_buffer(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    build_sample(&b);
    size_t first = b.len;
    build_sample(&b);
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    assert_int_equal(wire_next(b.data, b.len, 1024, &type, &c, &flen), 1);
    assert_int_equal(flen, first);
    assert_int_equal(wire_next(b.data + flen, b.len - flen, 1024, &type, &c, &flen), 1);
    assert_int_equal(flen, b.len - first);
    buf_done(&b);
}

static void test_frame_over_cap_is_malformed(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    build_sample(&b);
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    size_t body = b.len - WIRE_HEADER_BYTES;
    assert_int_equal(wire_next(b.data, b.len, body, &type, &c, &flen), 1);
    assert_int_equal(wire_next(b.data, b.len, body - 1, &type, &c, &flen), -1);
    /* a header announcing a huge body is refused before any byte of it arrives */
    const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0x7f };
    assert_int_equal(wire_next(huge, 4, 1024, &type, &c, &flen), -1);
    const uint8_t empty[5] = { 0, 0, 0, 0, 1 };
    assert_int_equal(wire_next(empty, 5, 1024, &type, &c, &flen), -1);
    buf_done(&b);
}

static void test_cursor_overrun_is_flagged(void **state)
{
    (void)state;
    /* a string whose length prefix points past the frame */
    const uint8_t frame[] = { 6, 0, 0, 0, WIRE_CONSOLE, 1, 200, 0, 0, 0 };
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    assert_int_equal(wire_next(frame, sizeof frame, 1024, &type, &c, &flen), 1);
    assert_int_equal(wire_get_u8(&c), 1);
    size_t len;
    const char *s = wire_get_str(&c, &len);
    assert_true(c.bad);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    /* every later read yields zero and stays bad */
    assert_int_equal(wire_get_u32(&c), 0);
    assert_true(wire_get_u64(&c) == 0);
    assert_true(c.bad);
}

static void test_buf_cap_is_exact(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 10);
    assert_int_equal(buf_append(&b, "0123456789", 10), BUF_OK);
    assert_string_equal(b.data, "0123456789");
    assert_int_equal(buf_append_byte(&b, 'x'), BUF_TOO_BIG);
    assert_int_equal(b.len, 0); /* poisoned: nothing cut short stays */
    buf_reset(&b);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "abcdefgh"), BUF_TOO_BIG);
    assert_int_equal(b.len, 0);
    buf_reset(&b);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "abcdef"), BUF_OK);
    assert_string_equal(b.data, "42-abcdef");
    buf_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_roundtrip),
        cmocka_unit_test(test_frame_needs_more_bytes),
        cmocka_unit_test(test_frame_two_in_one_buffer),
        cmocka_unit_test(test_frame_over_cap_is_malformed),
        cmocka_unit_test(test_cursor_overrun_is_flagged),
        cmocka_unit_test(test_buf_cap_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
