/*
 * auditlog.h - airlockd's side of the audit log: the Ed25519 checkpoint key (DATA_DIR/audit.key,
 * or AIRLOCK_AUDIT_KEY) and the verification of the stored chain with the verifier of
 * src/gov/audit.c, used at start (a broken chain is logged, not fatal) and by /v1/audit/verify.
 */
#ifndef AIRLOCK_SERVER_AUDITLOG_H
#define AIRLOCK_SERVER_AUDITLOG_H

#include <openssl/evp.h>
#include <stdint.h>

#include "store.h"

/* The key: AIRLOCK_AUDIT_KEY (64 hex digits, the raw Ed25519 private key) when set, else the
 * hex in DATA_DIR/audit.key, created (0600) with a new random key when missing. 0 with
 * *ret_key owned by the caller (EVP_PKEY_free); -1 with a message in err (256 bytes). */
int auditlog_key_load(const char *data_dir, EVP_PKEY **ret_key, char *err);

struct auditlog_result {
    int ok;
    int64_t records;
    char head[65];         /* the last record's hash ("" when the log is empty) */
    int64_t first_bad_seq; /* when !ok */
    char reason[320];      /* when !ok: the fault and why */
};

/* Walks every stored record: each line through the verifier (pinned to public_key_hex, an
 * unsealed tail allowed) and each row's columns against its line. STORE_OK with *ret filled,
 * or the store's failure. */
enum store_rc auditlog_verify(struct store *s, const char *public_key_hex,
                              struct auditlog_result *ret);

#endif
