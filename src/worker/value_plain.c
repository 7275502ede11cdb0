/*
 * value_plain.c - the decoder's fast path: plain JSON built by QuickJS's own JSON.parse.
 *
 * Most boundary text is plain JSON (no tags). Building it with JSON.parse in one pass touches
 * about half the memory of the node tree plus a walk. That is only sound when JSON.parse makes
 * exactly what the full decoder would: is_plain_json declines anything that could hold a tag or
 * that QuickJS's parser reads differently, and json_check holds the text to RFC 8259 and to the
 * depth limit first, since QuickJS's parser alone is laxer. Declining is always safe (the full
 * decoder in value_decode.c then runs, and reports what is wrong); accepting wrongly is not.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "value.h"
#include "value_internal.h"

/* 1 when `text` is plain JSON for the decoder's purpose, meaning exactly what JSON.parse makes
 * of it, so QuickJS's own parser can build it in one pass instead of the node tree plus a walk
 * (which touches about twice the memory). json_check then holds it to the grammar and the depth
 * limit. Refused here, for the full decoder:
 * - "$type" anywhere (even inside a string: that only costs the fast path), and any \u escape
 *   of an ASCII character, which could spell "$type" in a key;
 * - a run of 19 or more digits: QuickJS's parser truncates long integers instead of rounding
 *   them correctly (its js_strtod keeps about 19 digits). */
static int is_plain_json(const char *text, size_t len)
{
    unsigned digits = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') {
                if (i + 4 < len && text[i + 1] == 'u' && text[i + 2] == '0' && text[i + 3] == '0' &&
                    text[i + 4] >= '0' && text[i + 4] <= '7') {
                    return 0;
                }
                i++;
            } else if (c == '"') {
                in_string = 0;
            } else if (c == '$' && len - i >= 5 && memcmp(text + i, "$type", 5) == 0) {
                return 0;
            }
            continue;
        }
        if (c >= '0' && c <= '9') {
            if (++digits >= 19) {
                return 0;
            }
            continue;
        }
        digits = 0;
        in_string = c == '"';
    }
    return 1;
}

/* Plain JSON that json_check passed, through JSON.parse (see is_plain_json; QuickJS's parser
 * alone is laxer than RFC 8259, so it never sees text the strict parser refuses). AL_OK, or
 * anything else to take the full decoder, which then reports what went wrong. */
static enum al_code decode_plain(struct value_cache *cache, const char *text, size_t len,
                                 JSValue *ret_value)
{
    char *copy = malloc(len + 1); /* QuickJS's parser reads up to a terminating NUL */
    if (!copy) {
        return AL_SERIALIZATION_ERROR; /* the full decoder needs less at once */
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    JSValue v = JS_ParseJSON(cache->ctx, copy, len, "<host>");
    free(copy);
    if (JS_IsException(v)) {
        /* After json_check, the parser fails only for want of memory or stack. Out of
         * memory, the full decoder would only fail again, with the memory left for unwinding:
         * say so now (QuickJS throws "out of memory", or nothing when even that failed). */
        JSValue e = JS_GetException(cache->ctx);
        int oom = !JS_IsError(cache->ctx, e);
        if (!oom) {
            JSValue m = JS_GetPropertyStr(cache->ctx, e, "message");
            const char *msg = JS_ToCString(cache->ctx, m);
            oom = !msg || strcmp(msg, "out of memory") == 0;
            JS_FreeCString(cache->ctx, msg);
            JS_FreeValue(cache->ctx, m);
        }
        JS_FreeValue(cache->ctx, e);
        JSValue again = JS_GetException(cache->ctx); /* anything the message read threw */
        JS_FreeValue(cache->ctx, again);
        return oom ? AL_INTERNAL_ERROR : AL_SERIALIZATION_ERROR;
    }
    *ret_value = v;
    return AL_OK;
}

enum al_code value_plain_decode(struct value_cache *cache, const char *text, size_t len,
                                unsigned max_depth, JSValue *ret_value)
{
    if (len == 0 || !is_plain_json(text, len) || json_check(text, len, max_depth, NULL) != AL_OK) {
        return AL_SERIALIZATION_ERROR;
    }
    return decode_plain(cache, text, len, ret_value);
}
