/*
 * wire.h - the framed protocol between the host and airlock-worker (docs/protocol.md).
 *
 * A frame is a 4-byte little-endian body length, then the body: one type byte and a payload
 * of fixed-layout fields (u8, u32, u64 little-endian; strings as u32 length + bytes). Both
 * sides treat the peer as untrusted: lengths are checked against the frame cap and the
 * remaining payload before anything is read, and a malformed frame is a protocol error.
 */
#ifndef AIRLOCK_WIRE_H
#define AIRLOCK_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum wire_type {
    /* host -> worker */
    WIRE_RUN = 1,    /* limits, seed, clock, filename, host functions, source */
    WIRE_ANSWER = 2, /* a host call's outcome */
    /* worker -> host */
    WIRE_CALL = 16,    /* a host call: id, function index, boundary-JSON argument array, the line
                          of the run's source that made it (0: not known) */
    WIRE_CONSOLE = 17, /* one console entry: level, text */
    WIRE_DONE = 18,    /* the run's outcome; the worker exits after sending it */
    WIRE_READY = 19,   /* the worker has prepared its context: the run's clocks start now */
    WIRE_FAULT = 20,   /* the jail stopped a forbidden system call: u32 its number */
    WIRE_IDLE = 21,    /* replaying: the worker waits with every answer applied (u32 count) */
};

/* RUN flags (u8 after the clock) */
#define WIRE_RUN_REPORT_IDLE 1u /* send IDLE whenever the event loop blocks */
#define WIRE_RUN_MODULE      2u /* the source is an ES module (its default export is the value) */
#define WIRE_RUN_TYPESCRIPT  4u /* the source is TypeScript: the worker strips its types */

/* RUN per-function flags */
#define WIRE_FN_SYNC   1u /* a synchronous group */
#define WIRE_FN_HIDDEN 2u /* the module loader: the worker calls it, the guest never sees it */
#define WIRE_FN_FILE                                                                       \
    4u /* a workspace operation (hidden too): its arguments are bounded by the RUN frame's \
          file-arguments cap, not the host-args limit */

/* READY payload: u8 flags */
#define WIRE_READY_JAILED 1u /* the seccomp filter is active */

enum wire_answer_kind {
    WIRE_ANSWER_VALUE = 0,      /* payload: boundary JSON (empty = undefined) */
    WIRE_ANSWER_THROW = 1,      /* payload: error message */
    WIRE_ANSWER_INTERRUPT = 2,  /* no answer in this run: a person must decide (payload empty) */
    WIRE_ANSWER_TYPE_ERROR = 3, /* payload: error message; the guest sees a TypeError */
};

/* The answer is a thrown error (an Error or a TypeError). */
#define WIRE_ANSWER_THREW(kind) ((kind) == WIRE_ANSWER_THROW || (kind) == WIRE_ANSWER_TYPE_ERROR)

/* DONE's code when the run ends interrupted: every call still in flight was interrupted. */
#define WIRE_DONE_INTERRUPTED 0x100u

#define WIRE_HEADER_BYTES 4u

/* Builds one frame in `b` (appending): wire_begin, fields, wire_end. */
enum buf_status wire_begin(struct buf *b, enum wire_type type, size_t *ret_start);
enum buf_status wire_u8(struct buf *b, uint8_t v);
enum buf_status wire_u32(struct buf *b, uint32_t v);
enum buf_status wire_u64(struct buf *b, uint64_t v);
enum buf_status wire_str(struct buf *b, const char *s, size_t len);
/* Patches the length prefix of the frame begun at `start`. */
void wire_end(struct buf *b, size_t start);

/* A cursor over one received frame's payload. Reads past the end set `bad` and yield zeros. */
struct wire_cursor {
    const uint8_t *p;
    size_t left;
    int bad;
};

/* If `data` (len bytes) starts with a complete frame whose body is at most max_body bytes,
 * returns 1 and sets *ret_type, the payload cursor and *ret_frame_len (header + body).
 * Returns 0 when more bytes are needed, -1 when the frame is malformed (empty body or longer
 * than max_body). */
int wire_next(const void *data, size_t len, size_t max_body, uint8_t *ret_type,
              struct wire_cursor *ret_cursor, size_t *ret_frame_len);
uint8_t wire_get_u8(struct wire_cursor *c);
uint32_t wire_get_u32(struct wire_cursor *c);
uint64_t wire_get_u64(struct wire_cursor *c);
/* A string field: pointer into the frame (not NUL-terminated) and its length. */
const char *wire_get_str(struct wire_cursor *c, size_t *ret_len);

#endif
