/*
 * continuation.h - the signed continuation token (docs/continuations.md): what a resumed run
 * needs to replay an interrupted one, bound to its source, host functions, audience and
 * application context.
 *
 *   token = "alc1." base64url(body || HMAC-SHA-256(key, body))
 *
 * Decoding verifies the MAC (constant time, against every key given) before reading a single
 * field; the body parser is still written for hostile input (cont_parse, which the fuzz target
 * drives directly).
 */
#ifndef AIRLOCK_LIB_CONTINUATION_H
#define AIRLOCK_LIB_CONTINUATION_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#define CONT_VERSION      2  /* 2: the form, the store id and the source type are signed */
#define CONT_DIGEST       32 /* SHA-256 */
#define CONT_NONCE        16
#define CONT_IID          16 /* interruption id, raw bytes; shown as 32 hex digits */
#define CONT_IID_HEX      (2 * CONT_IID)
#define CONT_PREFIX       "alc1."
#define CONT_AUDIENCE_MAX 255

enum cont_kind {
    CONT_VALUE = 0,       /* answered with a value (boundary JSON; empty = undefined) */
    CONT_THROW = 1,       /* answered by throwing (payload: the message) */
    CONT_INTERRUPTED = 2, /* waiting for a person (payload: what the host asked) */
    CONT_THROW_TYPE = 3,  /* answered by throwing a TypeError (payload: the message) */
};

/* One host call the run made, keyed by its call id. */
struct cont_entry {
    uint32_t id;  /* 1-based call id */
    uint8_t kind; /* enum cont_kind */
    uint8_t sync; /* a synchronous group's call (answered where it was made) */
    char *fn;     /* "group.fn"; owned */
    uint8_t args_digest[CONT_DIGEST];
    uint32_t settle;  /* answered async calls: position in the answer order */
    int64_t clock_ms; /* answered calls: the guest clock the answer set */
    char *payload;    /* owned, NUL-terminated */
    size_t len;
    uint8_t iid[CONT_IID]; /* interrupted calls */
};

/* What a signed body is: handed out as a token, or kept in a store under one id. A stored body
 * is refused as a token and under any other id, so each store entry resumes at most once. */
enum cont_form {
    CONT_FORM_TOKEN = 0,
    CONT_FORM_STORED = 1,
};

struct continuation {
    uint8_t form;                       /* enum cont_form */
    char store_id[AL_STORE_ID_MAX + 1]; /* CONT_FORM_STORED: its id; else empty */
    uint8_t source[CONT_DIGEST];
    uint32_t source_type; /* the run's enum al_source_type, or-ed (al_run_opts_set_source_type) */
    uint8_t manifest[CONT_DIGEST];
    uint8_t context[CONT_DIGEST];
    char audience[CONT_AUDIENCE_MAX + 1];
    int64_t issued_ms;
    int64_t expires_ms;
    uint8_t nonce[CONT_NONCE];
    uint64_t seed;
    int64_t clock_ms;
    struct cont_entry *entries; /* ascending ids */
    size_t nentries;
};

struct cont_key {
    uint8_t *bytes;
    size_t len;
};

void cont_sha256(const void *data, size_t len, uint8_t out[CONT_DIGEST]);
/* Random bytes from OpenSSL's generator. 0, or -1 when it fails. */
int cont_random(void *out, size_t len);
void cont_iid_hex(const uint8_t iid[CONT_IID], char out[CONT_IID_HEX + 1]);
/* Parses 32 hex digits; 0, or -1. */
int cont_iid_parse(const char *hex, uint8_t out[CONT_IID]);

/* Serializes and signs. AL_OUTPUT_LIMIT when the token would exceed max_bytes,
 * AL_INTERNAL_ERROR when out of memory. *ret_token is malloc'd and NUL-terminated. */
enum al_code cont_encode(const struct continuation *c, const struct cont_key *key, size_t max_bytes,
                         char **ret_token, size_t *ret_len, struct al_error *reterr);
/* Checks the token's form and MAC against each key, then parses it into *ret (which the caller
 * frees with cont_free, also on failure). AL_PROTOCOL_ERROR with a message saying what is
 * wrong; binding checks (source, audience, expiry, ...) are the caller's. */
enum al_code cont_decode(const char *token, size_t len, const struct cont_key *keys, size_t nkeys,
                         size_t max_bytes, struct continuation *ret, struct al_error *reterr);
/* Parses a body (MAC already checked or stripped). 0, or -1 when malformed. */
int cont_parse(const uint8_t *body, size_t len, struct continuation *ret);
void cont_free(struct continuation *c);

#endif
