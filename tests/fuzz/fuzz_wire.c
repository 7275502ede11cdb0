/*
 * fuzz_wire.c - fuzz target for the frame codec (src/common/wire.c), the first thing either
 * side of the worker socket runs on the peer's bytes.
 *
 * The input is a byte stream of frames. For each frame wire_next finds, the claims are:
 *   - the frame lies inside the input and its body is within the cap;
 *   - reading fields (a sequence of u8/u32/u64/str picked from the frame's type byte) never
 *     goes past the payload: a short read sets `bad` and yields zeros or an empty string;
 *   - writing the fields read back with wire_begin/wire_* /wire_end gives a frame wire_next
 *     accepts with the same type and fields, byte for byte the original when the fields used
 *     the whole payload.
 * A malformed length (-1) or an incomplete frame (0) ends the stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_WIRE_MAX_BODY 65536u
#define FUZZ_WIRE_FIELDS   64

struct field {
    unsigned op; /* 0 u8, 1 u32, 2 u64, 3 str */
    uint64_t v;
    const char *s;
    size_t len;
};

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_wire: %s\n", what);
    abort();
}

/* Reads fields until the payload is used up or a read fails; returns how many were read. */
static size_t read_fields(uint8_t type, struct wire_cursor *c, struct field *f)
{
    size_t n = 0;
    while (n < FUZZ_WIRE_FIELDS && c->left > 0 && !c->bad) {
        size_t before = c->left;
        f[n].op = (type >> (2 * (n % 4))) & 3u;
        f[n].s = NULL;
        f[n].len = 0;
        f[n].v = 0;
        switch (f[n].op) {
        case 0:
            f[n].v = wire_get_u8(c);
            break;
        case 1:
            f[n].v = wire_get_u32(c);
            break;
        case 2:
            f[n].v = wire_get_u64(c);
            break;
        default:
            f[n].s = wire_get_str(c, &f[n].len);
            break;
        }
        if (c->left > before) {
            fail("a read grew the payload");
        }
        if (c->bad) {
            if (f[n].v != 0 || f[n].len != 0) {
                fail("a failed read yielded data");
            }
            break;
        }
        n++;
    }
    return n;
}

static void rebuild(uint8_t type, const struct field *f, size_t n, const uint8_t *orig,
                    size_t orig_len, int whole)
{
    struct buf b;
    buf_init(&b, FUZZ_WIRE_MAX_BODY + WIRE_HEADER_BYTES);
    size_t start = 0;
    enum buf_status st = wire_begin(&b, (enum wire_type)type, &start);
    for (size_t i = 0; st == BUF_OK && i < n; i++) {
        switch (f[i].op) {
        case 0:
            st = wire_u8(&b, (uint8_t)f[i].v);
            break;
        case 1:
            st = wire_u32(&b, (uint32_t)f[i].v);
            break;
        case 2:
            st = wire_u64(&b, f[i].v);
            break;
        default:
            st = wire_str(&b, f[i].s, f[i].len);
            break;
        }
    }
    if (st != BUF_OK) {
        fail("fields read from a frame do not fit in a frame again");
    }
    wire_end(&b, start);

    uint8_t type2 = 0;
    struct wire_cursor c2;
    size_t len2 = 0;
    if (wire_next(b.data, b.len, FUZZ_WIRE_MAX_BODY, &type2, &c2, &len2) != 1 || len2 != b.len ||
        type2 != type) {
        fail("a rebuilt frame is not read back whole");
    }
    struct field g[FUZZ_WIRE_FIELDS];
    if (read_fields(type2, &c2, g) != n || c2.bad || c2.left != 0) {
        fail("a rebuilt frame's fields differ in number");
    }
    for (size_t i = 0; i < n; i++) {
        if (g[i].v != f[i].v || g[i].len != f[i].len ||
            (f[i].len && memcmp(g[i].s, f[i].s, f[i].len) != 0)) {
            fail("a rebuilt frame's field differs");
        }
    }
    if (whole && (b.len != orig_len || memcmp(b.data, orig, orig_len) != 0)) {
        fail("a frame read whole is not rebuilt byte for byte");
    }
    buf_done(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        uint8_t type = 0;
        struct wire_cursor c;
        size_t frame_len = 0;
        int r = wire_next(data + off, size - off, FUZZ_WIRE_MAX_BODY, &type, &c, &frame_len);
        if (r <= 0) {
            break;
        }
        if (frame_len < WIRE_HEADER_BYTES + 1 || frame_len > size - off ||
            frame_len > FUZZ_WIRE_MAX_BODY + WIRE_HEADER_BYTES ||
            c.p != data + off + WIRE_HEADER_BYTES + 1 ||
            c.left != frame_len - WIRE_HEADER_BYTES - 1) {
            fail("wire_next returned a frame outside the input or the cap");
        }
        struct field f[FUZZ_WIRE_FIELDS];
        size_t n = read_fields(type, &c, f);
        for (size_t i = 0; i < n; i++) {
            if (f[i].op == 3 && f[i].len &&
                (f[i].s < (const char *)data + off ||
                 f[i].s + f[i].len > (const char *)data + off + frame_len)) {
                fail("a string field points outside its frame");
            }
        }
        rebuild(type, f, n, data + off, frame_len, !c.bad && c.left == 0);
        off += frame_len;
    }
    return 0;
}
