/*
 * fuzz_value.c - fuzz target for the value decoder (src/worker/value*.c): boundary JSON from
 * the host, which the worker turns into guest values.
 *
 * Each input gets a fresh runtime and context with a memory limit, so the claims are checked
 * per input:
 *   - value_decode returns AL_OK, AL_SERIALIZATION_ERROR or AL_INTERNAL_ERROR (out of memory),
 *     never crashes, and a failure leaves no value behind;
 *   - what it decodes encodes again (value_encode), and that encoding decodes and encodes to
 *     the same bytes: the boundary format is a fixed point after one round;
 *   - nothing leaks: QuickJS asserts at JS_FreeRuntime that every object was freed.
 * Linked through the worker's library target (al_engine), whatever files the decoder spans.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "quickjs.h"
#include "value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_VALUE_HEAP (32u << 20)

static const struct value_limits limits = { .max_depth = 64, .max_bytes = 8u << 20 };

static void fail(const char *what, const struct al_error *err)
{
    fprintf(stderr, "fuzz_value: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    abort();
}

/* Encodes v (borrowed) into b; AL_OK or the encoder's code. */
static enum al_code encode(JSContext *ctx, JSValueConst v, struct buf *b, struct al_error *err)
{
    enum al_code rc = value_encode(ctx, v, "value", &limits, b, err);
    if (rc == AL_USER_ERROR) {
        fail("encoding a decoded value ran guest code that threw", err);
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    JSRuntime *rt = JS_NewRuntime();
    JSContext *ctx = rt ? JS_NewContext(rt) : NULL;
    if (!ctx) {
        fail("cannot create a QuickJS context", NULL);
    }
    JS_SetMemoryLimit(rt, FUZZ_VALUE_HEAP);

    struct al_error err;
    memset(&err, 0, sizeof err);
    JSValue v = JS_UNDEFINED;
    enum al_code rc = value_decode(ctx, (const char *)data, size, &limits, &v, &err);
    if (rc != AL_OK && rc != AL_SERIALIZATION_ERROR && rc != AL_INTERNAL_ERROR) {
        fprintf(stderr, "fuzz_value: value_decode returned code %d: %s\n", rc, err.message);
        abort();
    }
    if (rc == AL_OK) {
        struct buf once;
        struct buf twice;
        buf_init(&once, limits.max_bytes);
        buf_init(&twice, limits.max_bytes);
        enum al_code erc = encode(ctx, v, &once, &err);
        JS_FreeValue(ctx, v);
        v = JS_UNDEFINED;
        /* A value may encode larger than its text (escapes, tags) or run out of heap. */
        if (erc == AL_OK) {
            JSValue w = JS_UNDEFINED;
            enum al_code drc =
                    value_decode(ctx, once.data ? once.data : "", once.len, &limits, &w, &err);
            if (drc == AL_SERIALIZATION_ERROR) {
                fprintf(stderr, "fuzz_value: the encoder's output is refused: %s\n%.*s\n",
                        err.message, (int)(once.len < 2000 ? once.len : 2000),
                        once.data ? once.data : "");
                abort();
            }
            if (drc == AL_OK) {
                enum al_code erc2 = encode(ctx, w, &twice, &err);
                JS_FreeValue(ctx, w);
                if (erc2 == AL_OK && (twice.len != once.len ||
                                      (once.len && memcmp(once.data, twice.data, once.len) != 0))) {
                    fprintf(stderr, "fuzz_value: not a fixed point:\n%.*s\n%.*s\n",
                            (int)(once.len < 2000 ? once.len : 2000), once.data,
                            (int)(twice.len < 2000 ? twice.len : 2000), twice.data);
                    abort();
                }
            }
        } else if (erc != AL_OUTPUT_LIMIT && erc != AL_INTERNAL_ERROR) {
            fail("encoding a decoded value failed", &err);
        }
        buf_done(&once);
        buf_done(&twice);
    }
    /* An out-of-memory failure may leave an exception pending; it must be freed like any value. */
    JS_FreeValue(ctx, JS_GetException(ctx));
    JS_FreeValue(ctx, v);
    JS_FreeContext(ctx);
    JS_FreeRuntime(rt);
    return 0;
}
