/*
 * buf.h - growable byte buffer with a hard cap fixed at init (curl's dynbuf).
 *
 * Errors are sticky: an append that does not fit under the cap, or finds no memory, empties
 * the buffer (data NULL, len 0) and poisons it, so that every later append fails with the same
 * status and does nothing. The owner checks once, at the end (buf_failed), and never hands on a
 * document with a piece missing; buf_reset clears the poison when the owner starts over (to
 * write its error instead). The content is always NUL-terminated (the terminator is not counted
 * in len and does not count against the cap).
 */
#ifndef AIRLOCK_BUF_H
#define AIRLOCK_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum buf_status {
    BUF_OK = 0,
    BUF_TOO_BIG = 1, /* the append would pass max */
    BUF_NO_MEMORY = 2,
};

struct buf {
    char *data;          /* NULL until the first append, and after a failed one; owned */
    size_t len;          /* bytes used */
    size_t cap;          /* bytes allocated, excluding the terminator */
    size_t max;          /* hard cap on len */
    enum buf_status err; /* the first failed append's status; BUF_OK while none failed */
};

void buf_init(struct buf *b, size_t max);
void buf_done(struct buf *b);
/* Empties the buffer, keeping its allocation, and clears a failure. */
void buf_reset(struct buf *b);
/* 1 when an append has failed since buf_init or the last buf_reset (the buffer is empty). */
int buf_failed(const struct buf *b);
enum buf_status buf_append(struct buf *b, const void *data, size_t len);
enum buf_status buf_append_str(struct buf *b, const char *s);
enum buf_status buf_append_byte(struct buf *b, uint8_t c);
enum buf_status buf_printf(struct buf *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Makes room for `len` more bytes and returns where they go (commit with buf_commit), or NULL
 * (and the buffer is poisoned). */
char *buf_reserve(struct buf *b, size_t len, enum buf_status *ret_status);
void buf_commit(struct buf *b, size_t len);
/* A malloc'd copy of len bytes of s, NUL-terminated (s may be NULL when len is 0); NULL when out
 * of memory. */
char *buf_dup(const char *s, size_t len);
/* Hands the data over to the caller (free() it) and empties the buffer. NULL when empty or
 * failed. */
char *buf_steal(struct buf *b, size_t *ret_len);

#endif
