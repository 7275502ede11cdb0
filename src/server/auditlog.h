/*
 * auditlog.h - airlockd's side of the audit log: the Ed25519 checkpoint key (DATA_DIR/audit.key,
 * or AIRLOCK_AUDIT_KEY) and the verification of the stored chain with the verifier of
 * src/gov/audit.c, used at start (a broken chain is logged, not fatal) and by /v1/audit/verify.
 */
#ifndef AIRLOCK_SERVER_AUDITLOG_H
#define AIRLOCK_SERVER_AUDITLOG_H

#include <openssl/evp.h>
#include <stdint.h>

#include "airlock.h"

#include "store.h"

/* The key: AIRLOCK_AUDIT_KEY (64 hex digits, the raw Ed25519 private key) when set, else the
 * hex in DATA_DIR/audit.key, created (0600) with a new random key when missing. 0 with
 * *ret_key owned by the caller (EVP_PKEY_free); -1 with reterr set (as keyfile_load;
 * AL_INTERNAL_ERROR when OpenSSL makes no Ed25519 key of the 32 bytes). */
int auditlog_key_load(const char *data_dir, EVP_PKEY **ret_key, struct al_error *reterr);

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

/* The same a piece at a time (a verification streamed while other requests are served), from
 * the record after from_seq (whose hash from_hash was verified before; 0 and NULL: from the
 * start) up to `end` (0: the log's end). -1 when out of memory. */
struct auditlog_check;
int auditlog_check_new(const char *public_key_hex, int64_t from_seq, const char *from_hash,
                       int64_t end, struct auditlog_check **ret);
/* Verifies up to max more records read through s; *ret_done once the end (or a fault) is
 * reached. STORE_OK, or the store's failure. */
enum store_rc auditlog_check_step(struct auditlog_check *c, struct store *s, int64_t max,
                                  int *ret_done);
/* What has been verified (records counts from the start of the log, from_seq included). */
void auditlog_check_result(const struct auditlog_check *c, struct auditlog_result *ret);
void auditlog_check_free(struct auditlog_check *c);

#endif
