/*
 * secretbox.c - AES-256-GCM sealing of connector secrets, and the key file. The key file is
 * written once with O_EXCL (two first starts never race to different keys), like audit.key.
 * GCM with a random 96-bit nonce is safe for far more seals than airlockd will ever make with
 * one key (a registration seals two values). The version and the context are the associated
 * data, so neither can be swapped without the tag failing. Plaintext buffers are cleansed
 * before they are freed; nothing here logs.
 */
#include "secretbox.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "keyfile.h"

#define SECRETBOX_PREFIX "v1:"

int secretbox_key_load(const char *data_dir, unsigned char ret_key[SECRETBOX_KEY_LEN],
                       struct al_error *reterr)
{
    /* the same key files as the continuation key's (keyfile.c): created 0600, never read
     * through a link */
    return keyfile_load(data_dir, "secret.key", "AIRLOCK_SECRET_KEY", SECRETBOX_KEY_LEN, ret_key,
                        reterr);
}

int secretbox_ring_load(const char *data_dir, struct keyfile_ring *ret, struct al_error *reterr)
{
    return keyfile_load_ring(data_dir, "secret.key", "AIRLOCK_SECRET_KEY", SECRETBOX_KEY_LEN, ret,
                             reterr);
}

int secretbox_keys_init(struct secretbox_keys *k)
{
    memset(k, 0, sizeof *k);
    return pthread_mutex_init(&k->lock, NULL) == 0 ? 0 : -1;
}

void secretbox_keys_done(struct secretbox_keys *k)
{
    OPENSSL_cleanse(k->keys, sizeof k->keys);
    pthread_mutex_destroy(&k->lock);
}

void secretbox_keys_set(struct secretbox_keys *k, const struct keyfile_ring *ring)
{
    pthread_mutex_lock(&k->lock);
    OPENSSL_cleanse(k->keys, sizeof k->keys);
    k->n = 0;
    for (size_t i = 0; i < ring->n && k->n < SECRETBOX_KEYS_MAX; i++) {
        memcpy(k->keys[k->n++], ring->keys + i * SECRETBOX_KEY_LEN, SECRETBOX_KEY_LEN);
    }
    if (ring->has_next && k->n < SECRETBOX_KEYS_MAX) {
        memcpy(k->keys[k->n++], ring->next, SECRETBOX_KEY_LEN);
    }
    pthread_mutex_unlock(&k->lock);
}

struct secretbox_keys *secretbox_keys_one(struct secretbox_keys *k,
                                          const unsigned char key[SECRETBOX_KEY_LEN])
{
    struct keyfile_ring ring = { .len = SECRETBOX_KEY_LEN, .n = 1 };
    memcpy(ring.keys, key, SECRETBOX_KEY_LEN);
    secretbox_keys_set(k, &ring);
    OPENSSL_cleanse(&ring, sizeof ring);
    return k;
}

size_t secretbox_keys_copy(struct secretbox_keys *k,
                           unsigned char ret[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN])
{
    pthread_mutex_lock(&k->lock);
    size_t n = k->n;
    memcpy(ret, k->keys, n * SECRETBOX_KEY_LEN);
    pthread_mutex_unlock(&k->lock);
    return n;
}

int secretbox_keys_seal(struct secretbox_keys *k, const char *context, const void *plain,
                        size_t len, char **ret_sealed)
{
    unsigned char keys[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN];
    int rc = secretbox_keys_copy(k, keys) > 0
                     ? secretbox_seal(keys[0], context, plain, len, ret_sealed)
                     : -1;
    OPENSSL_cleanse(keys, sizeof keys);
    return rc;
}

int secretbox_keys_open(struct secretbox_keys *k, const char *context, const char *sealed,
                        char **ret_plain, size_t *ret_len)
{
    /* one copy of the keys: a SIGHUP meanwhile does not mix two sets */
    unsigned char keys[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN];
    size_t n = secretbox_keys_copy(k, keys);
    int rc = -1;
    for (size_t i = 0; rc != 0 && i < n; i++) {
        rc = secretbox_open(keys[i], context, sealed, ret_plain, ret_len);
    }
    OPENSSL_cleanse(keys, sizeof keys);
    return rc;
}

/* Starts AES-256-GCM (enc 1 seals, 0 opens) with the nonce, and feeds the associated data: the
 * version and the context, with a NUL between them so that no two (version, context) pairs give
 * the same bytes. */
static int secretbox_start(EVP_CIPHER_CTX *ctx, int enc, const unsigned char *key,
                           const unsigned char *nonce, const char *context)
{
    int outl = 0;
    int ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SECRETBOX_NONCE_LEN, NULL) == 1 &&
             EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) == 1 &&
             EVP_CipherUpdate(ctx, NULL, &outl, (const unsigned char *)SECRETBOX_PREFIX,
                              (int)sizeof SECRETBOX_PREFIX) == 1 &&
             EVP_CipherUpdate(ctx, NULL, &outl, (const unsigned char *)context,
                              (int)strlen(context)) == 1;
    return ok ? 0 : -1;
}

int secretbox_seal(const unsigned char key[SECRETBOX_KEY_LEN], const char *context,
                   const void *plain, size_t len, char **ret_sealed)
{
    EVP_CIPHER_CTX *ctx = NULL;
    unsigned char *raw = NULL;
    char *text = NULL;
    int outl = 0;
    int fin = 0;
    int rc = -1;
    size_t raw_len = SECRETBOX_NONCE_LEN + len + SECRETBOX_TAG_LEN;
    if (len > SECRETBOX_PLAIN_MAX || !context) {
        goto out;
    }
    raw = malloc(raw_len);
    text = malloc(sizeof SECRETBOX_PREFIX + 2 * raw_len);
    ctx = EVP_CIPHER_CTX_new();
    if (!raw || !text || !ctx || RAND_bytes(raw, SECRETBOX_NONCE_LEN) != 1) {
        goto out;
    }
    if (secretbox_start(ctx, 1, key, raw, context) != 0 ||
        EVP_EncryptUpdate(ctx, raw + SECRETBOX_NONCE_LEN, &outl, plain, (int)len) != 1 ||
        EVP_EncryptFinal_ex(ctx, raw + SECRETBOX_NONCE_LEN + outl, &fin) != 1 ||
        (size_t)outl + (size_t)fin != len ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SECRETBOX_TAG_LEN,
                            raw + SECRETBOX_NONCE_LEN + len) != 1) {
        goto out;
    }
    memcpy(text, SECRETBOX_PREFIX, sizeof SECRETBOX_PREFIX - 1);
    hex_encode(raw, raw_len, text + sizeof SECRETBOX_PREFIX - 1);
    *ret_sealed = text;
    text = NULL;
    rc = 0;
out:
    if (raw) {
        OPENSSL_cleanse(raw, raw_len);
    }
    free(raw);
    free(text);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

int secretbox_open(const unsigned char key[SECRETBOX_KEY_LEN], const char *context,
                   const char *sealed, char **ret_plain, size_t *ret_len)
{
    EVP_CIPHER_CTX *ctx = NULL;
    unsigned char *raw = NULL;
    unsigned char *plain = NULL;
    size_t plain_len = 0;
    int outl = 0;
    int fin = 0;
    int rc = -1;
    const size_t prefix_len = sizeof SECRETBOX_PREFIX - 1;
    if (!sealed || !context || strncmp(sealed, SECRETBOX_PREFIX, prefix_len) != 0) {
        goto out;
    }
    size_t hex_len = strlen(sealed + prefix_len);
    size_t raw_len = hex_len / 2;
    if (hex_len % 2 != 0 || raw_len < SECRETBOX_NONCE_LEN + SECRETBOX_TAG_LEN ||
        raw_len - SECRETBOX_NONCE_LEN - SECRETBOX_TAG_LEN > SECRETBOX_PLAIN_MAX) {
        goto out;
    }
    plain_len = raw_len - SECRETBOX_NONCE_LEN - SECRETBOX_TAG_LEN;
    raw = malloc(raw_len);
    plain = malloc(plain_len + 1);
    ctx = EVP_CIPHER_CTX_new();
    if (!raw || !plain || !ctx || hex_decode(sealed + prefix_len, raw_len, raw) != 0) {
        goto out;
    }
    if (secretbox_start(ctx, 0, key, raw, context) != 0 ||
        EVP_DecryptUpdate(ctx, plain, &outl, raw + SECRETBOX_NONCE_LEN, (int)plain_len) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SECRETBOX_TAG_LEN,
                            raw + SECRETBOX_NONCE_LEN + plain_len) != 1 ||
        EVP_DecryptFinal_ex(ctx, plain + outl, &fin) != 1 ||
        (size_t)outl + (size_t)fin != plain_len) {
        goto out;
    }
    plain[plain_len] = '\0';
    *ret_plain = (char *)plain;
    *ret_len = plain_len;
    plain = NULL;
    rc = 0;
out:
    if (plain) {
        OPENSSL_cleanse(plain, plain_len + 1);
    }
    free(plain);
    free(raw);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}
