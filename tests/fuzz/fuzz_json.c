/*
 * fuzz_json.c - fuzz target for the strict JSON parser (src/common/json.c).
 *
 * Claims, for any bytes:
 *   - json_check and json_parse agree: the same code and, on failure, the same message (the
 *     value decoder's fast path and the host rely on json_check saying what json_parse would);
 *   - a parsed tree stays inside the input: every node's raw text lies within it, and a
 *     container's count is its number of children;
 *   - json_write_compact of accepted text is accepted again, is no longer than the input, and
 *     compacting it once more changes nothing.
 * Built as fuzz_replay_json (CTest fuzz.replay.json) and, with clang, as a libFuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_JSON_DEPTH 64

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_json: %s\n", what);
    abort();
}

static void walk(const struct json_node *n, const char *text, size_t len, unsigned depth)
{
    if (depth > FUZZ_JSON_DEPTH + 1) {
        fail("tree deeper than the depth limit");
    }
    if (!n->raw || n->raw < text || n->raw_len > len ||
        (size_t)(n->raw - text) > len - n->raw_len) {
        fail("a node's raw text lies outside the input");
    }
    size_t count = 0;
    for (const struct json_node *c = n->child; c; c = c->next) {
        if (n->type == JSON_OBJECT && !c->key) {
            fail("an object member without a key");
        }
        walk(c, text, len, depth + 1);
        count++;
    }
    if ((n->type == JSON_ARRAY || n->type == JSON_OBJECT) && count != n->count) {
        fail("a container's count differs from its children");
    }
    if (n->type == JSON_STRING && (!n->str || n->str[n->str_len] != '\0')) {
        fail("a string is not NUL-terminated");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct al_error check_err;
    struct al_error parse_err;
    memset(&check_err, 0, sizeof check_err);
    memset(&parse_err, 0, sizeof parse_err);

    enum al_code check = json_check(text, size, FUZZ_JSON_DEPTH, &check_err);
    struct json_doc *doc = NULL;
    enum al_code parse = json_parse(text, size, FUZZ_JSON_DEPTH, &doc, &parse_err);
    if (check != parse) {
        fprintf(stderr, "fuzz_json: json_check says %d, json_parse %d\n", check, parse);
        abort();
    }
    if (parse != AL_OK) {
        if (parse == AL_SERIALIZATION_ERROR && strcmp(check_err.message, parse_err.message) != 0) {
            fprintf(stderr, "fuzz_json: json_check says '%s', json_parse '%s'\n", check_err.message,
                    parse_err.message);
            abort();
        }
        return 0;
    }
    walk(json_root(doc), text, size, 1);
    json_doc_free(doc);

    struct buf once;
    struct buf twice;
    buf_init(&once, size + 1);
    buf_init(&twice, size + 1);
    if (json_write_compact(&once, text, size) != BUF_OK) {
        fail("json_write_compact refused accepted text, or made it longer");
    }
    if (json_check(once.data ? once.data : "", once.len, FUZZ_JSON_DEPTH, &check_err) != AL_OK) {
        fail("compacted text is not accepted");
    }
    if (json_write_compact(&twice, once.data ? once.data : "", once.len) != BUF_OK ||
        twice.len != once.len || (once.len && memcmp(once.data, twice.data, once.len) != 0)) {
        fail("compacting compacted text changed it");
    }
    buf_done(&once);
    buf_done(&twice);
    return 0;
}
