/*
 * buf.c - capped growable buffer. Growth doubles to amortise appends; the cap is checked before
 * any allocation so an outsider-controlled length can never make us allocate past it. Every
 * way to add bytes goes through buf_reserve, which is where a failure poisons the buffer.
 */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
    b->err = BUF_OK;
}

void buf_done(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->err = BUF_OK;
    if (b->data) {
        b->data[0] = '\0';
    }
}

int buf_failed(const struct buf *b)
{
    return b->err != BUF_OK;
}

/* Empties the buffer for good (until buf_reset): its data is gone, and so is every append. */
static char *buf_poison(struct buf *b, enum buf_status status, enum buf_status *ret_status)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->err = status;
    *ret_status = status;
    return NULL;
}

char *buf_reserve(struct buf *b, size_t len, enum buf_status *ret_status)
{
    if (b->err != BUF_OK) {
        *ret_status = b->err;
        return NULL;
    }
    if (len > b->max || b->len > b->max - len) {
        return buf_poison(b, BUF_TOO_BIG, ret_status);
    }
    size_t need = b->len + len;
    if (need > b->cap || !b->data) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < need) {
            cap = cap > SIZE_MAX / 4 ? need : cap * 2;
        }
        if (cap > b->max) {
            cap = b->max > need ? b->max : need;
        }
        char *p = realloc(b->data, cap + 1);
        if (!p) {
            return buf_poison(b, BUF_NO_MEMORY, ret_status);
        }
        b->data = p;
        b->cap = cap;
    }
    *ret_status = BUF_OK;
    return b->data + b->len;
}

void buf_commit(struct buf *b, size_t len)
{
    b->len += len;
    b->data[b->len] = '\0';
}

enum buf_status buf_append(struct buf *b, const void *data, size_t len)
{
    enum buf_status st;
    char *p = buf_reserve(b, len, &st);
    if (!p) {
        return st;
    }
    if (len) {
        memcpy(p, data, len);
    }
    buf_commit(b, len);
    return BUF_OK;
}

enum buf_status buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

enum buf_status buf_append_byte(struct buf *b, uint8_t c)
{
    if (b->data && b->len < b->cap && b->len < b->max) {
        b->data[b->len++] = (char)c;
        b->data[b->len] = '\0';
        return BUF_OK;
    }
    return buf_append(b, &c, 1);
}

enum buf_status buf_printf(struct buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        enum buf_status st;
        buf_poison(b, BUF_NO_MEMORY, &st);
        return st;
    }
    if ((size_t)n < sizeof small) {
        return buf_append(b, small, (size_t)n);
    }
    enum buf_status st;
    char *p = buf_reserve(b, (size_t)n, &st);
    if (!p) {
        return st;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_commit(b, (size_t)n);
    return BUF_OK;
}

char *buf_steal(struct buf *b, size_t *ret_len)
{
    char *p = b->data;
    if (ret_len) {
        *ret_len = b->len;
    }
    b->err = BUF_OK;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

char *buf_dup(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        if (len) {
            memcpy(p, s, len);
        }
        p[len] = '\0';
    }
    return p;
}
