/*
 * fuzz_schema.c - fuzz target for the template input schema (src/gov/schema.c).
 *
 * The input is a schema, a NUL byte, and a value to validate against it; without a NUL byte
 * the whole input is the schema and is validated against itself. Claims, for any bytes:
 *   - compiling either succeeds or fails with CONFIG_ERROR and a message (never a crash, a
 *     leak, or a walk past the depth bounds);
 *   - validation answers AL_OK, CONFIG_ERROR with a "<path>: <rule>" message whose path is
 *     "(root)" or starts with '/', or SERIALIZATION_ERROR for text that is not JSON;
 *   - schema_validate and schema_validate_node over the same parsed value agree, code and
 *     message, and a second validation says the same as the first;
 *   - every parsed value equals itself (schema_json_equal is reflexive).
 * Built as fuzz_replay_schema (CTest fuzz.replay.schema) and, with clang, as a libFuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_schema: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t schema_len = nul ? (size_t)(nul - text) : size;
    const char *value = nul ? nul + 1 : text;
    size_t value_len = nul ? size - schema_len - 1 : size;

    struct schema *s = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code rc = schema_compile(text, schema_len, &s, &err);
    if (rc != AL_OK) {
        if (rc != AL_CONFIG_ERROR || s || err.message[0] == '\0') {
            fail("compile failed without CONFIG_ERROR and a message", err.message);
        }
        return 0;
    }

    struct al_error first;
    struct al_error again;
    memset(&first, 0, sizeof first);
    memset(&again, 0, sizeof again);
    enum al_code v1 = schema_validate(s, value, value_len, &first);
    enum al_code v2 = schema_validate(s, value, value_len, &again);
    if (v1 != v2 || (v1 != AL_OK && strcmp(first.message, again.message) != 0)) {
        fail("two validations disagree", first.message);
    }
    if (v1 == AL_CONFIG_ERROR && strncmp(first.message, "(root): ", 8) != 0 &&
        first.message[0] != '/') {
        fail("a refusal without a path", first.message);
    }
    if (v1 != AL_OK && v1 != AL_CONFIG_ERROR && v1 != AL_SERIALIZATION_ERROR) {
        fail("validation answered an unexpected code", first.message);
    }

    struct json_doc *doc = NULL;
    if (json_parse(value, value_len, SCHEMA_INSTANCE_DEPTH, &doc, NULL) == AL_OK) {
        if (v1 == AL_SERIALIZATION_ERROR) {
            fail("parsed text refused as not JSON", first.message);
        }
        struct al_error node_err;
        memset(&node_err, 0, sizeof node_err);
        enum al_code vn = schema_validate_node(s, json_root(doc), &node_err);
        if (vn != v1 || (vn != AL_OK && strcmp(node_err.message, first.message) != 0)) {
            fail("schema_validate and schema_validate_node disagree", node_err.message);
        }
        if (!schema_json_equal(json_root(doc), json_root(doc))) {
            fail("a value differs from itself", NULL);
        }
        json_doc_free(doc);
    } else if (v1 != AL_SERIALIZATION_ERROR) {
        fail("text that does not parse was validated", first.message);
    }
    schema_free(s);
    return 0;
}
