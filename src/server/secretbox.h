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

#include <stddef.h>

#include "airlock.h"

#define SECRETBOX_KEY_LEN   32
#define SECRETBOX_NONCE_LEN 12
#define SECRETBOX_TAG_LEN   16
#define SECRETBOX_PLAIN_MAX ((size_t)1 << 20) /* bytes of one sealed value */

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
