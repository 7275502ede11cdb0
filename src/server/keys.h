/*
 * keys.h - airlockd's own keys as a running server holds them: the continuation keys (in the
 * runner), the audit signing key (in the store, shared by the writer and every reader) and the
 * secret keys (secretbox_keys). Each is read from its key file in the data directory, with the
 * key staged beside it (NAME.next, `airlockd keys rotate --prepare`), at start and again on
 * SIGHUP, so the nodes of a cluster take a rotation one by one without stopping
 * (docs/operations.md "Key rotation").
 */
#ifndef AIRLOCK_SERVER_KEYS_H
#define AIRLOCK_SERVER_KEYS_H

#include "airlock.h"

#include "reload.h"
#include "secretbox.h"
#include "store.h"

/* What SIGHUP re-reads the keys into; set once, before the first reload. */
struct keys_server {
    const char *data_dir;
    struct al_runner *runner;
    struct store *store; /* the writer's: its readers share the audit keys */
    struct secretbox_keys *secrets;
};

#define KEYS_ID_LEN 8 /* hex digits of a key id */

/* The id logs name a secret key by: the first KEYS_ID_LEN hex digits of SHA-256 over
 * "airlock-key-id", a newline and the key. */
void keys_id(const unsigned char *key, size_t len, char ret[KEYS_ID_LEN + 1]);

/* Sets config's continuation keys from DATA_DIR/continuation.key: the first signs; the older
 * ones and a staged next one verify. said names them by key id. 0, or -1 with reterr set. */
int keys_continuation_config(const char *data_dir, struct al_config *config,
                             char said[RELOAD_SAID_MAX], struct al_error *reterr);

/* Sets the store's audit key from DATA_DIR/audit.key and its next key from audit.key.next (or
 * none). said names their public keys. 0, or -1 with reterr set: the store's keys unchanged
 * when a file does not read (the store only fails to keep a key out of memory). */
int keys_audit_set(const char *data_dir, struct store *s, char said[RELOAD_SAID_MAX],
                   struct al_error *reterr);

/* Replaces k's keys by DATA_DIR/secret.key's (and secret.key.next). said names them by key id.
 * 0, or -1 with reterr set and k unchanged. */
int keys_secret_set(const char *data_dir, struct secretbox_keys *k, char said[RELOAD_SAID_MAX],
                    struct al_error *reterr);

/* reload_fn of each, arg a struct keys_server. */
int keys_reload_continuation(void *arg, char said[RELOAD_SAID_MAX]);
int keys_reload_audit(void *arg, char said[RELOAD_SAID_MAX]);
int keys_reload_secret(void *arg, char said[RELOAD_SAID_MAX]);

#endif
