/*
 * secretbox.h - the key that encrypts connector secrets at rest, and sealing with it.
 *
 * The key is 32 bytes: AIRLOCK_SECRET_KEY (64 hex digits) when set, else the hex in
 * DATA_DIR/secret.key, created (0600) with 32 random bytes on first start.
 *
 * A sealed value is text: "v1:" followed by lowercase hex of nonce (12 bytes) | ciphertext |
 * tag (16 bytes), AES-256-GCM with a random nonce per seal. The associated data is the version
 * and a context string naming where the value belongs ("connector/crm/signing_secret"), so a
 * sealed value copied to another connector or another field does not open.
 */
#ifndef AIRLOCK_SERVER_SECRETBOX_H
#define AIRLOCK_SERVER_SECRETBOX_H

#include <pthread.h>
#include <stddef.h>

#include "airlock.h"

#include "keyfile.h"

#define SECRETBOX_KEY_LEN   32
#define SECRETBOX_NONCE_LEN 12
#define SECRETBOX_TAG_LEN   16
#define SECRETBOX_PLAIN_MAX ((size_t)1 << 20) /* bytes of one sealed value */

#define SECRETBOX_KEYS_MAX (KEYFILE_KEEP_MAX + 1)

/* The secret keys of a running airlockd: the key in use seals; it, the keys it replaced and a
 * key staged to replace it (`airlockd keys rotate secret --prepare`) open. Any thread; replaced
 * whole on SIGHUP while values are sealed and opened. */
struct secretbox_keys {
    pthread_mutex_t lock;
    unsigned char keys[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN]; /* [0] seals */
    size_t n;                                                  /* 0 until set */
};

/* 0, or -1 when the lock cannot be made. */
int secretbox_keys_init(struct secretbox_keys *k);
void secretbox_keys_done(struct secretbox_keys *k); /* the keys cleansed */
/* k's keys replaced by ring's (keyfile_load_ring of secret.key; its next one too). */
void secretbox_keys_set(struct secretbox_keys *k, const struct keyfile_ring *ring);
/* k holding key alone (a server whose secret key was never rotated); k. */
struct secretbox_keys *secretbox_keys_one(struct secretbox_keys *k,
                                          const unsigned char key[SECRETBOX_KEY_LEN]);
/* DATA_DIR/secret.key as a ring (AIRLOCK_SECRET_KEY gives the key in use when set); 0, or -1
 * with reterr set (as keyfile_load_ring). */
int secretbox_ring_load(const char *data_dir, struct keyfile_ring *ret, struct al_error *reterr);
/* secretbox_seal with the key in use; -1 as it, or when k has no key. */
int secretbox_keys_seal(struct secretbox_keys *k, const char *context, const void *plain,
                        size_t len, char **ret_sealed);
/* secretbox_open with each of k's keys in turn: 0 when one opens the value, else -1. */
int secretbox_keys_open(struct secretbox_keys *k, const char *context, const char *sealed,
                        char **ret_plain, size_t *ret_len);
/* k's keys copied under one lock, the one in use first: how many (OPENSSL_cleanse them after). */
size_t secretbox_keys_copy(struct secretbox_keys *k,
                           unsigned char ret[SECRETBOX_KEYS_MAX][SECRETBOX_KEY_LEN]);

/* 0 with the key in ret_key; -1 with reterr set (as keyfile_load). */
int secretbox_key_load(const char *data_dir, unsigned char ret_key[SECRETBOX_KEY_LEN],
                       struct al_error *reterr);

/* Seals len bytes of plain for `context`. 0 with *ret_sealed (NUL-terminated, free()); -1 when
 * len is over SECRETBOX_PLAIN_MAX, the random generator or the cipher fails, or out of memory. */
int secretbox_seal(const unsigned char key[SECRETBOX_KEY_LEN], const char *context,
                   const void *plain, size_t len, char **ret_sealed);

/* Opens a sealed value for `context`. 0 with *ret_plain (NUL-terminated after *ret_len bytes;
 * free() it, after OPENSSL_cleanse if it matters); -1 when the text is not a sealed value of a
 * known version, or was sealed with another key or context, or was altered. */
int secretbox_open(const unsigned char key[SECRETBOX_KEY_LEN], const char *context,
                   const char *sealed, char **ret_plain, size_t *ret_len);

#endif
