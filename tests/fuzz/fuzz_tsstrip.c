/*
 * fuzz_tsstrip.c - libFuzzer target for the TypeScript stripper (src/tsstrip).
 *
 * Any bytes go in; the claims checked: no crash, no sanitizer report, no hang (libFuzzer's
 * -timeout), and on success with default options the output has the input's length, a NUL
 * after it, every line terminator where the input had it, and every other byte either the
 * input's, a space or a `;` (erasure never invents code). With TS_TRANSFORM only the absence of
 * crashes and a well-formed result are checked. A failure must leave a NUL-terminated message
 * and, for a syntax error or a refusal, a 1-based position inside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tsstrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const struct ts_error *err, size_t size)
{
    if (memchr(err->message, '\0', sizeof(err->message)) == NULL || err->message[0] == '\0') {
        abort();
    }
    if (err->kind == TS_ERR_SYNTAX || err->kind == TS_ERR_UNSUPPORTED) {
        if (err->line < 1 || err->column < 1 || err->offset > size) {
            abort();
        }
    }
}

static int is_line_end(const uint8_t *s, size_t n, size_t i)
{
    if (s[i] == '\n' || s[i] == '\r') {
        return 1;
    }
    return s[i] == 0xE2 && i + 2 < n && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;

    if (ts_strip(src, size, &out, &out_len, &err) == 0) {
        const uint8_t *o = (const uint8_t *)out;
        if (out_len != size || out[out_len] != '\0') {
            abort();
        }
        for (size_t i = 0; i < size; i++) {
            if (o[i] == data[i]) {
                continue;
            }
            if ((o[i] != ' ' && o[i] != ';') || is_line_end(data, size, i)) {
                abort();
            }
        }
        for (size_t i = 0; i < size; i++) {
            if (is_line_end(data, size, i) && o[i] != data[i]) {
                abort();
            }
        }
        free(out);
    } else {
        check_error(&err, size);
    }

    struct ts_options opts = { .name = "fuzz.ts", .flags = TS_TRANSFORM };
    out = NULL;
    if (ts_strip_opts(src, size, &opts, &out, &out_len, &err) == 0) {
        if (out[out_len] != '\0') {
            abort();
        }
        free(out);
    } else {
        check_error(&err, size);
    }
    return 0;
}
