/*
 * wire.c - frame building and bounds-checked frame parsing. Never trusts a length: every read
 * is checked against what is left of the frame, and a frame is never larger than its cap.
 */
#include "wire.h"

#include <string.h>

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum buf_status wire_begin(struct buf *b, enum wire_type type, size_t *ret_start)
{
    uint8_t hdr[5] = { 0, 0, 0, 0, (uint8_t)type };
    size_t start = b->len;
    enum buf_status st = buf_append(b, hdr, sizeof hdr);
    if (st == BUF_OK) {
        *ret_start = start;
    }
    return st;
}

enum buf_status wire_u8(struct buf *b, uint8_t v)
{
    return buf_append_byte(b, v);
}

enum buf_status wire_u32(struct buf *b, uint32_t v)
{
    uint8_t p[4];
    put_le32(p, v);
    return buf_append(b, p, 4);
}

enum buf_status wire_u64(struct buf *b, uint64_t v)
{
    uint8_t p[8];
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
    return buf_append(b, p, 8);
}

enum buf_status wire_str(struct buf *b, const char *s, size_t len)
{
    if (len > UINT32_MAX) {
        return BUF_TOO_BIG;
    }
    enum buf_status st = wire_u32(b, (uint32_t)len);
    if (st != BUF_OK) {
        return st;
    }
    return buf_append(b, s, len);
}

void wire_end(struct buf *b, size_t start)
{
    put_le32((uint8_t *)b->data + start, (uint32_t)(b->len - start - WIRE_HEADER_BYTES));
}

int wire_next(const void *data, size_t len, size_t max_body, uint8_t *ret_type,
              struct wire_cursor *ret_cursor, size_t *ret_frame_len)
{
    const uint8_t *p = data;
    if (len < WIRE_HEADER_BYTES) {
        return 0;
    }
    uint32_t body = get_le32(p);
    if (body == 0 || body > max_body) {
        return -1;
    }
    if (len - WIRE_HEADER_BYTES < body) {
        return 0;
    }
    *ret_type = p[WIRE_HEADER_BYTES];
    ret_cursor->p = p + WIRE_HEADER_BYTES + 1;
    ret_cursor->left = body - 1;
    ret_cursor->bad = 0;
    *ret_frame_len = WIRE_HEADER_BYTES + body;
    return 1;
}

static const uint8_t *take(struct wire_cursor *c, size_t n)
{
    if (c->bad || c->left < n) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

uint8_t wire_get_u8(struct wire_cursor *c)
{
    const uint8_t *p = take(c, 1);
    return p ? p[0] : 0;
}

uint32_t wire_get_u32(struct wire_cursor *c)
{
    const uint8_t *p = take(c, 4);
    return p ? get_le32(p) : 0;
}

uint64_t wire_get_u64(struct wire_cursor *c)
{
    const uint8_t *p = take(c, 8);
    return p ? (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32 : 0;
}

const char *wire_get_str(struct wire_cursor *c, size_t *ret_len)
{
    uint32_t n = wire_get_u32(c);
    const uint8_t *p = take(c, n);
    *ret_len = p ? n : 0;
    return p ? (const char *)p : "";
}
