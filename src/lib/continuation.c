/*
 * continuation.c - encoding, signing, verifying and parsing continuation tokens.
 *
 * Body (docs/continuations.md; integers are unsigned LEB128 varints unless sized, signed ones
 * zigzag-encoded, strings a varint length then bytes):
 *   u8 version | u8 form | str store_id | source[32] source_type manifest[32] context[32] |
 *   str audience | issued expires |
 *   nonce[16] | u64le seed | zigzag clock | count | entries...
 *   entry: id-delta | u8 kind (+0x80 sync) | str fn | args_digest[32] |
 *          value/throw: [settle, async only] zigzag clock-delta | str payload
 *          interrupted: iid[16] | str payload
 * The MAC is HMAC-SHA-256 over the body with the signing key, appended raw; the whole is
 * base64url without padding. The base64 decoder is strict (no padding, no whitespace, unused
 * bits zero), so one token text has exactly one meaning and every altered character is seen.
 */
#include "continuation.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"

#define CONT_MAC      32
#define CONT_TIME_MAX 8640000000000000LL /* the range of a JavaScript Date, in ms */

void cont_sha256(const void *data, size_t len, uint8_t out[CONT_DIGEST])
{
    unsigned int n = 0;
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != CONT_DIGEST) {
        memset(out, 0, CONT_DIGEST); /* cannot happen with the default provider */
    }
}

int cont_random(void *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

void cont_iid_hex(const uint8_t iid[CONT_IID], char out[CONT_IID_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < CONT_IID; i++) {
        out[2 * i] = hex[iid[i] >> 4];
        out[2 * i + 1] = hex[iid[i] & 15];
    }
    out[CONT_IID_HEX] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

int cont_iid_parse(const char *hex, uint8_t out[CONT_IID])
{
    if (strlen(hex) != CONT_IID_HEX) {
        return -1;
    }
    for (size_t i = 0; i < CONT_IID; i++) {
        int hi = hexval(hex[2 * i]);
        int lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* ------------------------------------------------------------------ base64url */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64_len(size_t n)
{
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

static void b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = b64[v >> 6 & 63];
        out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64[v >> 18];
        out[o++] = b64[v >> 12 & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64[v >> 18];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = b64[v >> 6 & 63];
    }
    out[o] = '\0';
}

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Strict decode into out (at least len*3/4 bytes): -1 on any character outside the alphabet,
 * an impossible length, or non-zero unused bits. */
static long b64_decode(const char *in, size_t len, uint8_t *out)
{
    if (len % 4 == 1) {
        return -1;
    }
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_val(in[i]);
        if (v < 0) {
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) {
        return -1;
    }
    return (long)o;
}

/* ------------------------------------------------------------------ writer */

static void put_var(struct buf *b, uint64_t v, int *bad)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    *bad |= buf_append(b, tmp, n) != BUF_OK;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void put_str(struct buf *b, const char *s, size_t len, int *bad)
{
    put_var(b, len, bad);
    *bad |= buf_append(b, s, len) != BUF_OK;
}

enum al_code cont_encode(const struct continuation *c, const struct cont_key *key, size_t max_bytes,
                         char **ret_token, size_t *ret_len, struct al_error *reterr)
{
    struct buf b;
    int bad = 0;
    buf_init(&b, SIZE_MAX / 2);
    bad |= buf_append_byte(&b, CONT_VERSION) != BUF_OK;
    bad |= buf_append_byte(&b, c->form) != BUF_OK;
    put_str(&b, c->store_id, strlen(c->store_id), &bad);
    bad |= buf_append(&b, c->source, CONT_DIGEST) != BUF_OK;
    put_var(&b, c->source_type, &bad);
    bad |= buf_append(&b, c->manifest, CONT_DIGEST) != BUF_OK;
    bad |= buf_append(&b, c->context, CONT_DIGEST) != BUF_OK;
    put_str(&b, c->audience, strlen(c->audience), &bad);
    put_var(&b, zigzag(c->issued_ms), &bad);
    put_var(&b, zigzag(c->expires_ms), &bad);
    bad |= buf_append(&b, c->nonce, CONT_NONCE) != BUF_OK;
    uint8_t seed[8];
    for (int i = 0; i < 8; i++) {
        seed[i] = (uint8_t)(c->seed >> (8 * i));
    }
    bad |= buf_append(&b, seed, sizeof seed) != BUF_OK;
    put_var(&b, zigzag(c->clock_ms), &bad);
    put_var(&b, c->nentries, &bad);
    uint32_t prev = 0;
    for (size_t i = 0; i < c->nentries; i++) {
        const struct cont_entry *e = &c->entries[i];
        put_var(&b, e->id - prev, &bad);
        prev = e->id;
        bad |= buf_append_byte(&b, (uint8_t)(e->kind | (e->sync ? 0x80 : 0))) != BUF_OK;
        put_str(&b, e->fn, strlen(e->fn), &bad);
        bad |= buf_append(&b, e->args_digest, CONT_DIGEST) != BUF_OK;
        if (e->kind == CONT_INTERRUPTED) {
            bad |= buf_append(&b, e->iid, CONT_IID) != BUF_OK;
        } else {
            if (!e->sync) {
                put_var(&b, e->settle, &bad);
            }
            put_var(&b, zigzag(e->clock_ms - c->clock_ms), &bad);
        }
        put_str(&b, e->payload ? e->payload : "", e->payload ? e->len : 0, &bad);
    }
    uint8_t mac[CONT_MAC];
    unsigned int maclen = 0;
    if (!bad && !HMAC(EVP_sha256(), key->bytes, (int)key->len, (const uint8_t *)b.data, b.len, mac,
                      &maclen)) {
        bad = 1;
    }
    bad |= buf_append(&b, mac, sizeof mac) != BUF_OK;
    if (bad) {
        buf_done(&b);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory encoding a continuation");
    }
    size_t tlen = sizeof CONT_PREFIX - 1 + b64_len(b.len);
    if (tlen > max_bytes) {
        buf_done(&b);
        return error_set(reterr, AL_OUTPUT_LIMIT,
                         "the continuation is %zu bytes, above the continuation limit of %zu "
                         "bytes",
                         tlen, max_bytes);
    }
    char *t = malloc(tlen + 1);
    if (!t) {
        buf_done(&b);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory encoding a continuation");
    }
    memcpy(t, CONT_PREFIX, sizeof CONT_PREFIX - 1);
    b64_encode((const uint8_t *)b.data, b.len, t + sizeof CONT_PREFIX - 1);
    buf_done(&b);
    *ret_token = t;
    *ret_len = tlen;
    return AL_OK;
}

/* ------------------------------------------------------------------ reader */

struct reader {
    const uint8_t *p;
    size_t left;
    int bad;
};

static uint64_t get_var(struct reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->left == 0) {
            r->bad = 1;
            return 0;
        }
        uint8_t byte = *r->p++;
        r->left--;
        if (shift == 63 && byte > 1) {
            r->bad = 1; /* more than 64 bits */
            return 0;
        }
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static const uint8_t *get_bytes(struct reader *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

static void get_fixed(struct reader *r, void *out, size_t n)
{
    const uint8_t *p = get_bytes(r, n);
    if (p) {
        memcpy(out, p, n);
    }
}

/* A string as a malloc'd NUL-terminated copy; NULL (and bad) when malformed or too long. */
static char *get_str(struct reader *r, size_t max, size_t *ret_len)
{
    uint64_t n = get_var(r);
    if (r->bad || n > max || n > r->left) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = get_bytes(r, (size_t)n);
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->bad = 1;
        return NULL;
    }
    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    if (ret_len) {
        *ret_len = (size_t)n;
    }
    return s;
}

static int in_range(int64_t v, int64_t max)
{
    return v >= -max && v <= max;
}

int cont_parse(const uint8_t *body, size_t len, struct continuation *c)
{
    struct reader r = { body, len, 0 };
    memset(c, 0, sizeof *c);
    const uint8_t *version = get_bytes(&r, 1);
    if (!version || *version != CONT_VERSION) {
        return -1;
    }
    const uint8_t *form = get_bytes(&r, 1);
    if (!form || *form > CONT_FORM_STORED) {
        return -1;
    }
    c->form = *form;
    size_t idlen = 0;
    char *id = get_str(&r, AL_STORE_ID_MAX, &idlen);
    /* a stored body names its id, a token none */
    if (!id || memchr(id, '\0', idlen) || (idlen == 0) != (c->form == CONT_FORM_TOKEN)) {
        free(id);
        return -1;
    }
    memcpy(c->store_id, id, idlen + 1);
    free(id);
    get_fixed(&r, c->source, CONT_DIGEST);
    uint64_t type = get_var(&r);
    if (type & ~(uint64_t)(AL_SOURCE_MODULE | AL_SOURCE_TYPESCRIPT)) {
        return -1;
    }
    c->source_type = (uint32_t)type;
    get_fixed(&r, c->manifest, CONT_DIGEST);
    get_fixed(&r, c->context, CONT_DIGEST);
    size_t alen = 0;
    char *aud = get_str(&r, CONT_AUDIENCE_MAX, &alen);
    if (!aud) {
        return -1;
    }
    memcpy(c->audience, aud, alen + 1);
    free(aud);
    c->issued_ms = unzigzag(get_var(&r));
    c->expires_ms = unzigzag(get_var(&r));
    get_fixed(&r, c->nonce, CONT_NONCE);
    uint8_t seed[8] = { 0 };
    get_fixed(&r, seed, sizeof seed);
    for (int i = 0; i < 8; i++) {
        c->seed |= (uint64_t)seed[i] << (8 * i);
    }
    c->clock_ms = unzigzag(get_var(&r));
    if (!in_range(c->clock_ms, CONT_TIME_MAX) || !in_range(c->issued_ms, CONT_TIME_MAX) ||
        !in_range(c->expires_ms, CONT_TIME_MAX) || memchr(c->audience, '\0', alen)) {
        return -1;
    }
    uint64_t n = get_var(&r);
    /* Every entry takes at least 36 bytes: a count beyond that is a lie, not an allocation. */
    if (r.bad || n > r.left / 36 || n > UINT32_MAX) {
        return -1;
    }
    c->entries = calloc(n ? (size_t)n : 1, sizeof *c->entries);
    if (!c->entries) {
        return -1;
    }
    uint64_t prev = 0;
    for (size_t i = 0; i < n && !r.bad; i++) {
        struct cont_entry *e = &c->entries[i];
        c->nentries = i + 1;
        uint64_t delta = get_var(&r);
        /* prev <= UINT32_MAX, so the subtraction cannot wrap where `prev + delta` could */
        if (delta == 0 || delta > UINT32_MAX - prev) {
            return -1; /* ids strictly ascending, and 32-bit */
        }
        prev += delta;
        e->id = (uint32_t)prev;
        const uint8_t *kind = get_bytes(&r, 1);
        if (!kind || (*kind & 0x7f) > CONT_THROW_TYPE) {
            return -1;
        }
        e->kind = *kind & 0x7f;
        e->sync = (*kind & 0x80) != 0;
        size_t fnlen = 0;
        e->fn = get_str(&r, 511, &fnlen);
        if (!e->fn || memchr(e->fn, '\0', fnlen)) {
            return -1;
        }
        get_fixed(&r, e->args_digest, CONT_DIGEST);
        if (e->kind == CONT_INTERRUPTED) {
            if (e->sync) {
                return -1; /* a synchronous call cannot interrupt */
            }
            get_fixed(&r, e->iid, CONT_IID);
        } else {
            if (!e->sync) {
                uint64_t s = get_var(&r);
                if (s > UINT32_MAX) {
                    return -1;
                }
                e->settle = (uint32_t)s;
            }
            int64_t dclock = unzigzag(get_var(&r));
            if (!in_range(dclock, 2 * CONT_TIME_MAX) ||
                !in_range(c->clock_ms + dclock, CONT_TIME_MAX)) {
                return -1;
            }
            e->clock_ms = c->clock_ms + dclock;
        }
        e->payload = get_str(&r, SIZE_MAX, &e->len);
    }
    if (r.bad || r.left != 0) {
        return -1;
    }
    /* The answer order must be a permutation of 0..k-1 over the answered async calls. */
    size_t k = 0;
    for (size_t i = 0; i < c->nentries; i++) {
        k += c->entries[i].kind != CONT_INTERRUPTED && !c->entries[i].sync;
    }
    uint8_t *seen = calloc(k ? k : 1, 1);
    if (!seen) {
        return -1;
    }
    int ok = 1;
    for (size_t i = 0; i < c->nentries && ok; i++) {
        const struct cont_entry *e = &c->entries[i];
        if (e->kind != CONT_INTERRUPTED && !e->sync) {
            ok = e->settle < k && !seen[e->settle];
            if (ok) {
                seen[e->settle] = 1;
            }
        }
    }
    free(seen);
    return ok ? 0 : -1;
}

void cont_free(struct continuation *c)
{
    for (size_t i = 0; i < c->nentries; i++) {
        free(c->entries[i].fn);
        free(c->entries[i].payload);
    }
    free(c->entries);
    c->entries = NULL;
    c->nentries = 0;
}

enum al_code cont_decode(const char *token, size_t len, const struct cont_key *keys, size_t nkeys,
                         size_t max_bytes, struct continuation *ret, struct al_error *reterr)
{
    memset(ret, 0, sizeof *ret);
    if (len > max_bytes) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation is %zu bytes, above the continuation limit of %zu "
                         "bytes",
                         len, max_bytes);
    }
    size_t plen = sizeof CONT_PREFIX - 1;
    if (len < plen || memcmp(token, CONT_PREFIX, plen) != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "not a continuation token (it must start with \"" CONT_PREFIX "\")");
    }
    uint8_t *raw = malloc((len - plen) / 4 * 3 + 3);
    if (!raw) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory decoding a continuation");
    }
    long n = b64_decode(token + plen, len - plen, raw);
    if (n < CONT_MAC + 1) {
        free(raw);
        return error_set(reterr, AL_PROTOCOL_ERROR, "the continuation token is malformed");
    }
    size_t body = (size_t)n - CONT_MAC;
    int verified = 0;
    for (size_t i = 0; i < nkeys; i++) {
        uint8_t mac[CONT_MAC];
        unsigned int maclen = 0;
        if (HMAC(EVP_sha256(), keys[i].bytes, (int)keys[i].len, raw, body, mac, &maclen) &&
            maclen == CONT_MAC) {
            verified |= CRYPTO_memcmp(mac, raw + body, CONT_MAC) == 0;
        }
    }
    if (!verified) {
        free(raw);
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation's signature does not verify (altered, or signed with "
                         "another key)");
    }
    int pr = cont_parse(raw, body, ret);
    free(raw);
    if (pr != 0) {
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "the continuation is signed but malformed (unknown version?)");
    }
    return AL_OK;
}
