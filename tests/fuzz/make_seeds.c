/*
 * make_seeds.c - writes the seed corpus of fuzz_continuation into a folder: a few valid
 * continuations, each as a token signed with the fuzz key (token_N) and as its raw body
 * (body_N, the token's base64url decoded, less the 32-byte MAC), and hand-made bodies at the
 * edges of the format (edge_N).
 *
 *   make_seeds DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continuation.h"
#include "fuzz_key.h"

static const struct cont_key key = { fuzz_key_bytes, sizeof fuzz_key_bytes };

static int b64val(char ch)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *p = strchr(a, ch);
    return ch && p ? (int)(p - a) : -1;
}

static int write_file(const char *dir, const char *name, int n, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_%d", dir, name, n);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok) {
        perror(path);
    }
    return ok ? 0 : -1;
}

static int emit(const char *dir, int n, const struct continuation *c)
{
    char *token = NULL;
    size_t tlen = 0;
    struct al_error err;
    if (cont_encode(c, &key, SIZE_MAX, &token, &tlen, &err) != AL_OK) {
        fprintf(stderr, "make_seeds: cont_encode: %s\n", err.message);
        return -1;
    }
    size_t plen = sizeof CONT_PREFIX - 1;
    uint8_t *raw = malloc(tlen);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = plen; raw && i < tlen; i++) {
        acc = acc << 6 | (uint32_t)b64val(token[i]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            raw[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    int rc = -1;
    if (raw && o > 32) {
        rc = write_file(dir, "token", n, token, tlen);
        rc |= write_file(dir, "body", n, raw, o - 32);
    }
    free(raw);
    free(token);
    return rc;
}

/* A body whose one entry's clock delta is INT64_MIN from a clock of -1: the entry clock is out
 * of range of int64_t (found by this fuzzer; kept so that every run tries it first). */
static int emit_clock_edge(const char *dir)
{
    uint8_t b[176];
    size_t n = 0;
    memset(b, 0, sizeof b);
    b[n++] = CONT_VERSION;
    b[n++] = CONT_FORM_TOKEN;
    b[n++] = 0x00;        /* no store id */
    n += CONT_DIGEST;     /* source */
    b[n++] = 0x00;        /* source type */
    n += 2 * CONT_DIGEST; /* manifest, context */
    n += 3;               /* empty audience, issued 0, expires 0 */
    n += CONT_NONCE + 8;  /* nonce, seed */
    b[n++] = 0x01;        /* clock: zigzag(-1) */
    b[n++] = 0x01;        /* one entry */
    b[n++] = 0x01;        /* id delta 1 */
    b[n++] = 0x80;        /* sync value */
    b[n++] = 0x00;        /* empty fn */
    n += CONT_DIGEST;     /* args digest */
    for (int i = 0; i < 9; i++) {
        b[n++] = 0xff; /* clock delta: zigzag(INT64_MIN) = UINT64_MAX */
    }
    b[n++] = 0x01;
    b[n++] = 0x00; /* empty payload */
    return write_file(dir, "edge", 0, b, n);
}

/* A body whose second entry's id delta wraps prev + delta around 64 bits to an id below the
 * first one (found by this fuzzer as crash-08d5eb81...; cont_parse must refuse it). */
static int emit_delta_edge(const char *dir)
{
    uint8_t b[256];
    size_t n = 0;
    memset(b, 0, sizeof b);
    b[n++] = CONT_VERSION;
    b[n++] = CONT_FORM_TOKEN;
    b[n++] = 0x00;        /* no store id */
    n += CONT_DIGEST;     /* source */
    b[n++] = 0x00;        /* source type */
    n += 2 * CONT_DIGEST; /* manifest, context */
    n += 3;               /* empty audience, issued 0, expires 0 */
    n += CONT_NONCE + 8;  /* nonce, seed */
    b[n++] = 0x00;        /* clock 0 */
    b[n++] = 0x02;        /* two entries */
    for (int entry = 0; entry < 2; entry++) {
        if (entry == 0) {
            b[n++] = 0x05; /* id 5 */
        } else {
            for (int i = 0; i < 9; i++) {
                b[n++] = i == 0 ? 0xfd : 0xff; /* delta 2^64 - 3: 5 + delta = 2 (mod 2^64) */
            }
            b[n++] = 0x01;
        }
        b[n++] = 0x80;    /* sync value */
        b[n++] = 0x00;    /* empty fn */
        n += CONT_DIGEST; /* args digest */
        b[n++] = 0x00;    /* clock delta 0 */
        b[n++] = 0x00;    /* empty payload */
    }
    return write_file(dir, "edge", 1, b, n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    struct continuation c;
    memset(&c, 0, sizeof c);
    memset(c.source, 0x11, sizeof c.source);
    memset(c.manifest, 0x22, sizeof c.manifest);
    memset(c.context, 0x33, sizeof c.context);
    snprintf(c.audience, sizeof c.audience, "orders");
    c.issued_ms = 1700000000000;
    c.expires_ms = 1700000600000;
    memset(c.nonce, 0x44, sizeof c.nonce);
    c.seed = 0x0123456789abcdefULL;
    c.clock_ms = 1700000000123;

    /* 0: no entries */
    int rc = emit(argv[1], 0, &c);

    /* 1: one of each kind: async value, sync value, async throw, interrupted */
    char fn_a[] = "db.get", fn_b[] = "util.now", fn_c[] = "db.put", fn_d[] = "approve.ask";
    char p_a[] = "{\"id\":7,\"total\":12.5}", p_b[] = "", p_c[] = "conflict",
         p_d[] = "{\"question\":\"ship it?\"}";
    struct cont_entry e[4];
    memset(e, 0, sizeof e);
    e[0] = (struct cont_entry){ .id = 1,
                                .kind = CONT_VALUE,
                                .fn = fn_a,
                                .settle = 1,
                                .clock_ms = 1700000000200,
                                .payload = p_a,
                                .len = strlen(p_a) };
    e[1] = (struct cont_entry){ .id = 2,
                                .kind = CONT_VALUE,
                                .sync = 1,
                                .fn = fn_b,
                                .clock_ms = 1700000000100,
                                .payload = p_b,
                                .len = 0 };
    e[2] = (struct cont_entry){ .id = 5,
                                .kind = CONT_THROW,
                                .fn = fn_c,
                                .settle = 0,
                                .clock_ms = 1700000000150,
                                .payload = p_c,
                                .len = strlen(p_c) };
    e[3] = (struct cont_entry){
        .id = 9, .kind = CONT_INTERRUPTED, .fn = fn_d, .payload = p_d, .len = strlen(p_d)
    };
    for (int i = 0; i < 4; i++) {
        memset(e[i].args_digest, 0x50 + i, CONT_DIGEST);
    }
    memset(e[3].iid, 0xa5, CONT_IID);
    c.entries = e;
    c.nentries = 4;
    rc |= emit(argv[1], 1, &c);

    /* 3: the stored form of a TypeScript module */
    c.form = CONT_FORM_STORED;
    snprintf(c.store_id, sizeof c.store_id, "als_0123456789abcdef0123456789abcdef");
    c.source_type = AL_SOURCE_MODULE | AL_SOURCE_TYPESCRIPT;
    rc |= emit(argv[1], 3, &c);
    c.form = CONT_FORM_TOKEN;
    c.store_id[0] = '\0';
    c.source_type = AL_SOURCE_BODY;

    /* 2: negative times, an empty audience, one sync throw */
    c.audience[0] = '\0';
    c.issued_ms = -5;
    c.expires_ms = -1;
    c.clock_ms = -1000;
    e[1].kind = CONT_THROW;
    e[1].clock_ms = -2000;
    c.entries = &e[1];
    c.nentries = 1;
    rc |= emit(argv[1], 2, &c);

    rc |= emit_clock_edge(argv[1]);
    rc |= emit_delta_edge(argv[1]);
    return rc ? 1 : 0;
}
