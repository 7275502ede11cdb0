/*
 * fuzz_s3_list.c - fuzz target for the ListObjectsV2 answer parser (s3_list_parse in
 * src/server/s3.c), which reads what any server at a mount's endpoint sends.
 *
 * Claims, for any bytes: it never reads past the input (ASan); every key it hands on is at
 * most S3_KEY_MAX bytes, holds no NUL and has the length it says; a continuation token comes
 * only with success; the error message is NUL-terminated. Built as fuzz_replay_s3_list (CTest
 * fuzz.replay.s3_list) and, with clang, as a libFuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_s3_list: %s\n", what);
    abort();
}

static int check_item(const struct s3_list_item *item, void *ud)
{
    (void)ud;
    if (item->key_len > S3_KEY_MAX || strlen(item->key) != item->key_len) {
        fail("a key with a NUL or over the bound");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1); /* exactly size bytes: ASan sees a read past it */
    char *token = NULL;
    char err[160];
    if (!copy) {
        return 0;
    }
    memcpy(copy, data, size);
    int rc = s3_list_parse(copy, size, check_item, NULL, &token, err, sizeof err);
    if (rc != 0 && token) {
        fail("a token from a failed parse");
    }
    if (rc != 0 && !memchr(err, '\0', sizeof err)) {
        fail("an unterminated message");
    }
    free(token);
    free(copy);
    return 0;
}
