/*
 * keys.c - airlockd's keys read into the running server (keys.h). Every file is read whole
 * before anything is replaced, so a bad file on SIGHUP leaves the keys in use. Logs name a key
 * by its id - the first 8 hex digits of SHA-256 over "airlock-key-id", a newline and the key -
 * never by the key itself; the audit key by its public key.
 */
#include "keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "error.h"
#include "keyfile.h"

void keys_id(const unsigned char *key, size_t len, char ret[KEYS_ID_LEN + 1])
{
    static const char prefix[] = "airlock-key-id\n";
    static const char digits[] = "0123456789abcdef";
    unsigned char text[sizeof prefix + KEYFILE_MAX];
    unsigned char digest[SHA256_DIGEST_LENGTH];
    memcpy(text, prefix, sizeof prefix - 1);
    memcpy(text + sizeof prefix - 1, key, len);
    SHA256(text, sizeof prefix - 1 + len, digest);
    OPENSSL_cleanse(text, sizeof text);
    for (int i = 0; i < KEYS_ID_LEN / 2; i++) {
        ret[2 * i] = digits[digest[i] >> 4];
        ret[2 * i + 1] = digits[digest[i] & 15];
    }
    ret[KEYS_ID_LEN] = '\0';
}

/* "key ID[, 1 older key DOES | N older keys DO][, next key ID staged]" */
static void keys_describe(const struct keyfile_ring *ring, const char *does, const char *do_,
                          char said[RELOAD_SAID_MAX])
{
    char id[KEYS_ID_LEN + 1];
    char next[KEYS_ID_LEN + 1];
    char older[64] = "";
    keys_id(ring->keys, ring->len, id);
    if (ring->n > 1) {
        snprintf(older, sizeof older, ", %zu older key%s %s", ring->n - 1, ring->n > 2 ? "s" : "",
                 ring->n > 2 ? do_ : does);
    }
    if (ring->has_next) {
        keys_id(ring->next, ring->len, next);
    }
    snprintf(said, RELOAD_SAID_MAX, "key %s%s%s%s%s", id, older,
             ring->has_next ? ", next key " : "", ring->has_next ? next : "",
             ring->has_next ? " staged" : "");
}

int keys_continuation_config(const char *data_dir, struct al_config *config,
                             char said[RELOAD_SAID_MAX], struct al_error *reterr)
{
    struct keyfile_ring ring;
    int rc = -1;
    if (keyfile_load_ring(data_dir, "continuation.key", "AIRLOCK_CONTINUATION_KEY", 32, &ring,
                          reterr) != 0) {
        goto out;
    }
    /* the staged key verifies before it signs: another node may sign with it first; with a full
     * file it takes the place of the oldest key */
    size_t older = ring.n - 1;
    if (ring.has_next && older == AL_CONTINUATION_KEYS_MAX - 1) {
        older--;
        ring.n--; /* and the log says so */
    }
    if (al_config_set_continuation_key(config, ring.keys, ring.len) != AL_OK) {
        error_set(reterr, AL_CONFIG_ERROR, "the continuation key is not usable");
        goto out;
    }
    for (size_t i = 1; i <= older + (ring.has_next ? 1 : 0); i++) {
        const unsigned char *key = i <= older ? ring.keys + i * ring.len : ring.next;
        if (al_config_add_verification_key(config, key, ring.len) != AL_OK) {
            error_set(reterr, AL_CONFIG_ERROR, "too many continuation keys");
            goto out;
        }
    }
    keys_describe(&ring, "verifies", "verify", said);
    rc = 0;
out:
    OPENSSL_cleanse(&ring, sizeof ring);
    return rc;
}

int keys_audit_set(const char *data_dir, struct store *s, char said[RELOAD_SAID_MAX],
                   struct al_error *reterr)
{
    struct keyfile_ring ring;
    char pub[AUDIT_KEY_HEX_LEN + 1];
    char next_pub[AUDIT_KEY_HEX_LEN + 1] = "";
    EVP_PKEY *key = NULL;
    EVP_PKEY *next = NULL;
    int rc = -1;
    if (keyfile_load_ring(data_dir, "audit.key", "AIRLOCK_AUDIT_KEY", 32, &ring, reterr) != 0) {
        goto out;
    }
    key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, ring.keys, ring.len);
    next = ring.has_next ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, ring.next, ring.len)
                         : NULL;
    if (!key || (ring.has_next && !next) || audit_public_key_hex(key, pub, NULL) != AL_OK ||
        (next && audit_public_key_hex(next, next_pub, NULL) != AL_OK)) {
        error_set(reterr, AL_INTERNAL_ERROR, "the audit key is not an Ed25519 private key");
        goto out;
    }
    /* the key first: between the two calls the store holds the new key and the next one it
     * held, so a checkpoint signed then finds the log's key in both steps of a rotation */
    if (s->ops->audit_set_key(s, key) != STORE_OK ||
        s->ops->audit_set_next_key(s, next) != STORE_OK) {
        error_set(reterr, AL_INTERNAL_ERROR, "the store does not take the audit key: %s",
                  s->ops->errmsg(s));
        goto out;
    }
    snprintf(said, RELOAD_SAID_MAX, "public key %s%s%.16s%s", pub, next ? ", next key " : "",
             next_pub, next ? "... staged" : "");
    rc = 0;
out:
    EVP_PKEY_free(key);
    EVP_PKEY_free(next);
    OPENSSL_cleanse(&ring, sizeof ring);
    return rc;
}

int keys_secret_set(const char *data_dir, struct secretbox_keys *k, char said[RELOAD_SAID_MAX],
                    struct al_error *reterr)
{
    struct keyfile_ring ring;
    int rc = secretbox_ring_load(data_dir, &ring, reterr);
    if (rc == 0) {
        secretbox_keys_set(k, &ring);
        keys_describe(&ring, "opens", "open", said);
    }
    OPENSSL_cleanse(&ring, sizeof ring);
    return rc;
}

int keys_reload_continuation(void *arg, char said[RELOAD_SAID_MAX])
{
    const struct keys_server *ks = arg;
    struct al_error err;
    memset(&err, 0, sizeof err);
    struct al_config *config = al_config_new();
    int rc = -1;
    if (!config) {
        snprintf(said, RELOAD_SAID_MAX, "out of memory");
    } else if (keys_continuation_config(ks->data_dir, config, said, &err) != 0 ||
               al_runner_set_continuation_keys(ks->runner, config, &err) != AL_OK) {
        snprintf(said, RELOAD_SAID_MAX, "%s", err.message);
    } else {
        rc = 0;
    }
    al_config_free(config);
    return rc;
}

int keys_reload_audit(void *arg, char said[RELOAD_SAID_MAX])
{
    const struct keys_server *ks = arg;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (keys_audit_set(ks->data_dir, ks->store, said, &err) != 0) {
        snprintf(said, RELOAD_SAID_MAX, "%s", err.message);
        return -1;
    }
    return 0;
}

int keys_reload_secret(void *arg, char said[RELOAD_SAID_MAX])
{
    const struct keys_server *ks = arg;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (keys_secret_set(ks->data_dir, ks->secrets, said, &err) != 0) {
        snprintf(said, RELOAD_SAID_MAX, "%s", err.message);
        return -1;
    }
    return 0;
}
