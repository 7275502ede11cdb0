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

#include "buf.h"
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

/* Walks every stored record: each line through the verifier (pinned to public_key_hex, which
 * may be a key announced later in the chain of keys; an unsealed tail allowed) and each row's
 * columns against its line. STORE_OK with *ret filled, or the store's failure. */
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

/* The JSON of a checkpoint, as GET /v1/audit/checkpoint answers it and DATA_DIR/audit.head
 * holds it: {"seq","hash","time","public_key","signature"} and a newline. */
enum buf_status auditlog_checkpoint_json(const struct store_checkpoint *cp, struct buf *b);

/* The newest checkpoint this airlockd knows, kept outside the database as well: in
 * DATA_DIR/audit.head (each node of several its own) and, with a witness, sent there. A log
 * only grows, so a log that ends before it, or whose record at its seq hashes otherwise, was
 * cut: that is what auditlog_kept_check reports. */
struct auditlog_kept;
struct witness;

/* Reads DATA_DIR/audit.head when there is one: a file that is not a checkpoint whose signature
 * verifies under its own key is reported on stderr and set aside (the next checkpoint replaces
 * it). Checkpoints kept later go to `witness` too (NULL: none). -1 when out of memory. */
int auditlog_kept_open(const char *data_dir, struct witness *witness, struct auditlog_kept **ret);
void auditlog_kept_free(struct auditlog_kept *k);
/* The kept checkpoint against the log read through s: *ret ok, or not ok with first_bad_seq
 * and a reason "truncated: ...". STORE_OK, or the store's failure. k may be NULL (ok). */
enum store_rc auditlog_kept_check(struct auditlog_kept *k, struct store *s,
                                  struct auditlog_result *ret);
/* Keeps cp (a checkpoint of records committed and read through s) when it is newer than the
 * one kept and the log still holds that one: written to audit.head (a temporary file, fsync,
 * rename, fsync of the directory), then handed to the witness. A log found cut keeps the old
 * one, so the evidence stays until an operator removes audit.head. Thread-safe; k may be NULL. */
void auditlog_kept_keep(struct auditlog_kept *k, struct store *s,
                        const struct store_checkpoint *cp);

#endif
