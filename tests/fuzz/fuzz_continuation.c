/*
 * fuzz_continuation.c - libFuzzer target for the continuation token codec (src/lib/continuation.c).
 *
 * Every input is used three ways:
 *   (a) as a token string for cont_decode with a fixed key (prefix, strict base64url, MAC; an
 *       input without the "alc1." prefix is also tried with it prepended, so the base64 and MAC
 *       checks see arbitrary text);
 *   (b) as a body for cont_parse directly (random input almost never passes the MAC);
 *   (c) whenever (a) or (b) yields a continuation: cont_encode it with the key, cont_decode the
 *       token and abort unless the result is the same continuation, field by field.
 * Built as fuzz_replay_continuation (CTest fuzz.replay.continuation, any compiler) and, with
 * clang, as a libFuzzer binary (fuzz.continuation); see tests/fuzz/CMakeLists.txt.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continuation.h"
#include "fuzz_key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cont_key key = { fuzz_key_bytes, sizeof fuzz_key_bytes };

static void mismatch(const char *what, size_t entry)
{
    if (entry == SIZE_MAX) {
        fprintf(stderr, "fuzz_continuation: round trip changed %s\n", what);
    } else {
        fprintf(stderr, "fuzz_continuation: round trip changed entry %zu's %s\n", entry, what);
    }
    abort();
}

static void same_entry(const struct cont_entry *a, const struct cont_entry *b, size_t i)
{
    if (a->id != b->id) {
        mismatch("id", i);
    }
    if (a->kind != b->kind) {
        mismatch("kind", i);
    }
    if (a->sync != b->sync) {
        mismatch("sync flag", i);
    }
    if (!a->fn || !b->fn || strcmp(a->fn, b->fn) != 0) {
        mismatch("fn", i);
    }
    if (memcmp(a->args_digest, b->args_digest, CONT_DIGEST) != 0) {
        mismatch("args digest", i);
    }
    if (!a->payload || !b->payload || a->len != b->len ||
        memcmp(a->payload, b->payload, a->len) != 0 || b->payload[b->len] != '\0') {
        mismatch("payload", i);
    }
    if (a->kind == CONT_INTERRUPTED) {
        if (memcmp(a->iid, b->iid, CONT_IID) != 0) {
            mismatch("interruption id", i);
        }
    } else {
        if (a->settle != b->settle) {
            mismatch("settle", i);
        }
        if (a->clock_ms != b->clock_ms) {
            mismatch("clock", i);
        }
    }
}

static void same(const struct continuation *a, const struct continuation *b)
{
    if (a->form != b->form) {
        mismatch("form", SIZE_MAX);
    }
    if (strcmp(a->store_id, b->store_id) != 0) {
        mismatch("store id", SIZE_MAX);
    }
    if (a->source_type != b->source_type) {
        mismatch("source type", SIZE_MAX);
    }
    if (memcmp(a->source, b->source, CONT_DIGEST) != 0) {
        mismatch("source", SIZE_MAX);
    }
    if (memcmp(a->manifest, b->manifest, CONT_DIGEST) != 0) {
        mismatch("manifest", SIZE_MAX);
    }
    if (memcmp(a->context, b->context, CONT_DIGEST) != 0) {
        mismatch("context", SIZE_MAX);
    }
    if (strcmp(a->audience, b->audience) != 0) {
        mismatch("audience", SIZE_MAX);
    }
    if (a->issued_ms != b->issued_ms) {
        mismatch("issued", SIZE_MAX);
    }
    if (a->expires_ms != b->expires_ms) {
        mismatch("expires", SIZE_MAX);
    }
    if (memcmp(a->nonce, b->nonce, CONT_NONCE) != 0) {
        mismatch("nonce", SIZE_MAX);
    }
    if (a->seed != b->seed) {
        mismatch("seed", SIZE_MAX);
    }
    if (a->clock_ms != b->clock_ms) {
        mismatch("clock", SIZE_MAX);
    }
    if (a->nentries != b->nentries) {
        mismatch("entry count", SIZE_MAX);
    }
    for (size_t i = 0; i < a->nentries; i++) {
        same_entry(&a->entries[i], &b->entries[i], i);
    }
}

/* (c): what parsed must encode, and the token must decode to the same continuation. */
static void round_trip(const struct continuation *c)
{
    char *token = NULL;
    size_t tlen = 0;
    struct al_error err;
    if (cont_encode(c, &key, SIZE_MAX, &token, &tlen, &err) != AL_OK) {
        fprintf(stderr, "fuzz_continuation: cont_encode failed on a parsed continuation: %s\n",
                err.message);
        abort();
    }
    if (tlen != strlen(token)) {
        fprintf(stderr, "fuzz_continuation: cont_encode returned length %zu for %zu bytes\n", tlen,
                strlen(token));
        abort();
    }
    struct continuation back;
    if (cont_decode(token, tlen, &key, 1, SIZE_MAX, &back, &err) != AL_OK) {
        fprintf(stderr, "fuzz_continuation: cont_decode refused cont_encode's token: %s\n",
                err.message);
        abort();
    }
    same(c, &back);
    cont_free(&back);
    free(token);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct continuation c;
    struct al_error err;

    /* (a) the input as a token */
    if (cont_decode((const char *)data, size, &key, 1, SIZE_MAX, &c, &err) == AL_OK) {
        round_trip(&c);
    }
    cont_free(&c);

    size_t plen = sizeof CONT_PREFIX - 1;
    if (size < plen || memcmp(data, CONT_PREFIX, plen) != 0) {
        char *t = malloc(plen + size + 1);
        if (t) {
            memcpy(t, CONT_PREFIX, plen);
            if (size) {
                memcpy(t + plen, data, size);
            }
            if (cont_decode(t, plen + size, &key, 1, SIZE_MAX, &c, &err) == AL_OK) {
                round_trip(&c);
            }
            cont_free(&c);
            free(t);
        }
    }

    /* (b) the input as a body */
    if (cont_parse(data, size, &c) == 0) {
        round_trip(&c);
    }
    cont_free(&c);
    return 0;
}
