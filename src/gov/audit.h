/*
 * audit.h - the tamper-evident audit log: one record's canonical form and hash, Ed25519
 * checkpoints, and the offline verifier of an export (docs/audit.md is the format's reference).
 *
 * A record is a JSON object {seq, time, actor, action, subject, department, details, prev, hash};
 * hash = lowercase hex of SHA-256( prev as its 64 ASCII hex characters || JCS(record without
 * hash) ). A checkpoint signs "airlock-audit-checkpoint\n" SEQ "\n" HASH "\n" with Ed25519 and
 * appears in an export as a record of action "audit.checkpoint" whose details are
 * {seq, hash, public_key, signature} of an earlier record. An export is one record per line, from
 * seq 1, and ends with a checkpoint of the record just before it, so truncation shows.
 * Pure functions over memory: nothing here reads files, prints or keeps global state.
 */
#ifndef AIRLOCK_AUDIT_H
#define AIRLOCK_AUDIT_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "buf.h"

#define AUDIT_HASH_HEX_LEN      64  /* SHA-256, lowercase hex */
#define AUDIT_KEY_HEX_LEN       64  /* raw Ed25519 public key, lowercase hex */
#define AUDIT_SIG_HEX_LEN       128 /* Ed25519 signature, lowercase hex */
#define AUDIT_CHECKPOINT_ACTION "audit.checkpoint"
#define AUDIT_SERVER_ACTOR      "airlockd"
#define AUDIT_MAX_SEQ           9007199254740991ull /* 2^53 - 1: exact as a JSON number */

/* The fields of one record, borrowed from the caller for the duration of a call. */
struct audit_record {
    uint64_t seq;           /* from 1, no gaps */
    const char *time;       /* RFC 3339 UTC with milliseconds: "2026-01-31T12:00:00.000Z" */
    const char *actor;      /* principal name, or AUDIT_SERVER_ACTOR */
    const char *action;     /* "template.approve", "run.complete", "auth.denied", ... */
    const char *subject;    /* what the action was on (may be "") */
    const char *department; /* NULL: JSON null */
    const char *details;    /* JSON object text (any spacing); NULL: {} */
    const char *prev;       /* the previous record's hash; 64 '0' for seq 1 */
};

/* hash = SHA-256(prev_hex[0..64) || canon[0..len)) as lowercase hex into ret_hash (NUL-ended).
 * AL_CONFIG_ERROR when prev_hex is not 64 lowercase hex digits, AL_INTERNAL_ERROR on a libcrypto
 * failure. */
enum al_code audit_hash(const char *prev_hex, const char *canon, size_t len,
                        char ret_hash[AUDIT_HASH_HEX_LEN + 1], struct al_error *reterr);

/* Appends the record's export line to `line` (its JCS including hash; no newline) and writes
 * its hash to ret_hash. AL_CONFIG_ERROR when a field breaks the format (seq 0 or above
 * AUDIT_MAX_SEQ, bad time, NULL or empty actor/action, details not a JSON object or not I-JSON,
 * bad prev; the message names the field), AL_OUTPUT_LIMIT when `line`'s cap is reached,
 * AL_INTERNAL_ERROR when out of memory. On failure `line` may hold part of a line. */
enum al_code audit_record_write(const struct audit_record *rec, struct buf *line,
                                char ret_hash[AUDIT_HASH_HEX_LEN + 1], struct al_error *reterr);

/* Makes a record's details total: `details` (len bytes, one JSON object) as I-JSON, so that a
 * record of it can always be written whatever text a guest or a connector put in it. Each
 * top-level member whose value (or name) is not I-JSON is written with every lone surrogate
 * replaced by U+FFFD, followed by the member "NAME_sha256": lowercase hex SHA-256 of the
 * member's value as it stood, as compact JSON (the boundary format's bytes: a lone surrogate
 * as \udxxx); a value that is still not I-JSON then (two member names that became the same, a
 * number beyond a double) is written as null. Other members are copied byte for byte. With
 * nothing to replace *ret_changed is 0 and `total` untouched; else 1 and the new details are
 * appended to `total`. AL_CONFIG_ERROR when details is not one JSON object (nothing written),
 * AL_OUTPUT_LIMIT when `total`'s cap is reached, AL_INTERNAL_ERROR when out of memory. */
enum al_code audit_details_total(const char *details, size_t len, struct buf *total,
                                 int *ret_changed, struct al_error *reterr);

/* Appends the details of a checkpoint record covering (seq, hash):
 * {"hash":...,"public_key":...,"seq":...,"signature":...}, ready for audit_record.details. */
enum buf_status audit_checkpoint_details(struct buf *b, uint64_t seq, const char *hash_hex,
                                         const char *public_key_hex, const char *signature_hex);

/* Appends the details of a checkpoint record that also announces the next key:
 * {"hash","next_public_key","public_key","seq","signature"}, the signature
 * audit_announce_sign's. */
enum buf_status audit_announce_details(struct buf *b, uint64_t seq, const char *hash_hex,
                                       const char *public_key_hex, const char *signature_hex,
                                       const char *next_key_hex);

/* The key the log is at after a checkpoint record whose details are as audit_checkpoint_details
 * or audit_announce_details write them (members sorted): the one it announces, else the one that
 * signed it, as hex into ret_hex. 0, or -1 (ret_hex untouched) when details names neither. */
int audit_details_log_key(const char *details, char ret_hex[AUDIT_KEY_HEX_LEN + 1]);

/* The raw Ed25519 public key of `key` (a private or public Ed25519 EVP_PKEY) as hex.
 * AL_CONFIG_ERROR when the key is not Ed25519. */
enum al_code audit_public_key_hex(EVP_PKEY *key, char ret_hex[AUDIT_KEY_HEX_LEN + 1],
                                  struct al_error *reterr);

/* Signs the checkpoint text of (seq, hash_hex) with the Ed25519 private `key`; the signature as
 * hex. AL_CONFIG_ERROR for a bad seq, hash or key, AL_INTERNAL_ERROR on a libcrypto failure. */
enum al_code audit_checkpoint_sign(EVP_PKEY *key, uint64_t seq, const char *hash_hex,
                                   char ret_sig[AUDIT_SIG_HEX_LEN + 1], struct al_error *reterr);

/* Checks a checkpoint signature. AL_OK with *ret_valid 1 (good) or 0 (does not verify);
 * AL_CONFIG_ERROR (nothing written) when public_key_hex, signature_hex or hash_hex is not hex of
 * the right length; AL_INTERNAL_ERROR on a libcrypto failure. */
enum al_code audit_checkpoint_verify(const char *public_key_hex, uint64_t seq, const char *hash_hex,
                                     const char *signature_hex, int *ret_valid,
                                     struct al_error *reterr);

/* Key rotation: the key in use signs "airlock-audit-key\n" SEQ "\n" HASH "\n" NEXT "\n" (NEXT
 * the next key's raw public key as hex), the details of a checkpoint record that names the next
 * key as next_public_key; the checkpoints after it are signed with the next key. Same codes as
 * audit_checkpoint_sign and audit_checkpoint_verify (AL_CONFIG_ERROR for a NULL or malformed
 * next key as well). */
enum al_code audit_announce_sign(EVP_PKEY *key, uint64_t seq, const char *hash_hex,
                                 const char *next_key_hex, char ret_sig[AUDIT_SIG_HEX_LEN + 1],
                                 struct al_error *reterr);
enum al_code audit_announce_verify(const char *public_key_hex, uint64_t seq, const char *hash_hex,
                                   const char *next_key_hex, const char *signature_hex,
                                   int *ret_valid, struct al_error *reterr);

/* What is wrong with an export, by the first record where it shows. */
enum audit_fault {
    AUDIT_FAULT_NONE = 0,
    AUDIT_FAULT_MALFORMED,  /* not JSON, not a record object, a field missing/extra/mistyped */
    AUDIT_FAULT_SEQ,        /* seq gap, duplicate, or out of order (or not starting at 1) */
    AUDIT_FAULT_PREV,       /* prev is not the previous record's hash */
    AUDIT_FAULT_HASH,       /* hash is not the hash of this record */
    AUDIT_FAULT_CHECKPOINT, /* a checkpoint names a record that is not there with that hash */
    AUDIT_FAULT_SIGNATURE,  /* a checkpoint's signature does not verify */
    AUDIT_FAULT_KEY,        /* a checkpoint's key is not the key the chain is at (the pinned key,
                               or the first one seen, or the last one announced) */
    AUDIT_FAULT_UNSEALED,   /* the export does not end with a checkpoint of its last record */
    AUDIT_FAULT_EMPTY,      /* no records at all */
    AUDIT_FAULT_TRUNCATED,  /* the export ends before the seq of a checkpoint kept earlier */
    AUDIT_FAULT_INTERNAL,   /* out of memory or a libcrypto failure: nothing was decided */
};

/* A short name for each fault ("hash mismatch", "broken prev link", ...). */
const char *audit_fault_name(enum audit_fault fault);

struct audit_problem {
    enum audit_fault fault;
    uint64_t seq; /* the seq the bad line carries; 0 when it has none (malformed, empty) */
    size_t line;  /* 1-based line number; 0 for AUDIT_FAULT_EMPTY */
    char why[256];
};

struct audit_summary {
    uint64_t records;     /* lines accepted, checkpoints included */
    uint64_t checkpoints; /* of which checkpoints */
    uint64_t last_seq;
    uint64_t sealed_seq; /* highest seq a verified checkpoint covers; 0: none */
    char last_hash[AUDIT_HASH_HEX_LEN + 1];
    char key[AUDIT_KEY_HEX_LEN + 1]; /* the key the chain of keys ends at ("" when none) */
    size_t keys;                     /* keys in the chain (1 + announcements); 0 when none */
    int key_pinned;                  /* 1 when a key was given to audit_verifier_new */
    uint64_t kept_seq;               /* audit_verifier_expect's seq (0: none given) */
};

/* Accept an export whose tail after its last checkpoint is unsealed (it is reported, not
 * refused; audit_summary.sealed_seq tells how far the signature reaches). */
#define AUDIT_ALLOW_UNSEALED 1u
/* The pinned key need not be the first: it may be one announced later in the chain of keys, and
 * then at least one checkpoint must be signed with it (its checkpoints cover, through the hash
 * chain, every record before them, the earlier keys' announcements included). airlockd pins its
 * own current key so. Without it the pinned key is where the chain starts. */
#define AUDIT_PIN_IN_CHAIN 2u

#define AUDIT_CHAIN_MAX 64 /* keys in one chain (63 rotations) */

struct audit_verifier;

/* A verifier for one export. pinned_key_hex: the Ed25519 public key (hex) the first checkpoint
 * must carry, or NULL to accept the key the first checkpoint carries; every later checkpoint
 * must carry the same key, or the next one a checkpoint signed with it announced
 * (next_public_key, audit_announce_sign): the chain of keys. AL_CONFIG_ERROR for a malformed key,
 * AL_INTERNAL_ERROR when out of memory. */
enum al_code audit_verifier_new(const char *pinned_key_hex, unsigned flags,
                                struct audit_verifier **ret_verifier, struct al_error *reterr);
void audit_verifier_free(struct audit_verifier *v);
/* Before any line: the log up to `seq` (whose record hashes to hash_hex) was verified already,
 * so the next line must be seq + 1 chained to it (seq 0: from the start, as without it).
 * Checkpoints after it may only cover records from seq on. AL_CONFIG_ERROR after a line or for
 * a malformed hash; AL_INTERNAL_ERROR when out of memory. */
enum al_code audit_verifier_start_at(struct audit_verifier *v, uint64_t seq, const char *hash_hex,
                                     struct al_error *reterr);

/* A checkpoint kept from the server earlier (the fields of GET /v1/audit/checkpoint): the
 * export must reach `seq` with that record hash, the checkpoint's key must be the pinned key
 * (or, unpinned, the export's checkpoints' key) and its signature must verify. Checked by
 * audit_verifier_finish: AUDIT_FAULT_TRUNCATED when the export ends before `seq`,
 * AUDIT_FAULT_CHECKPOINT when that record hashes otherwise, AUDIT_FAULT_KEY or
 * AUDIT_FAULT_SIGNATURE. AL_CONFIG_ERROR (nothing kept) for a seq or hex field out of format. */
enum al_code audit_verifier_expect(struct audit_verifier *v, uint64_t seq, const char *hash_hex,
                                   const char *public_key_hex, const char *signature_hex,
                                   struct al_error *reterr);

/* The newest checkpoint kept outside the log (kept_seq, kept_hash: airlockd's DATA_DIR/audit.head)
 * against the log as stored now: last_seq, its last seq, and stored_hash, the hash of its
 * record at kept_seq (NULL when there is none). A log only grows, so AUDIT_FAULT_NONE when it
 * reaches kept_seq with that hash; otherwise AUDIT_FAULT_TRUNCATED with *ret_problem (may be
 * NULL): seq is the first seq missing (last_seq + 1) when the log ends before kept_seq, else
 * kept_seq (its record was replaced), and why names the checkpoint's seq and hash. */
enum audit_fault audit_kept_compare(uint64_t kept_seq, const char *kept_hash, uint64_t last_seq,
                                    const char *stored_hash, struct audit_problem *ret_problem);

/* Feeds the next line (without its newline; len bytes, need not be NUL-terminated). Returns
 * AUDIT_FAULT_NONE, or the fault with *ret_problem filled (may be NULL); once a fault is
 * returned every later call returns it again. */
enum audit_fault audit_verifier_line(struct audit_verifier *v, const char *line, size_t len,
                                     struct audit_problem *ret_problem);

/* Ends the export: AUDIT_FAULT_EMPTY, AUDIT_FAULT_UNSEALED (unless allowed), or the fault a
 * line already gave; AUDIT_FAULT_NONE when the whole export verifies. */
enum audit_fault audit_verifier_finish(struct audit_verifier *v, struct audit_problem *ret_problem);

/* What has been verified so far. */
void audit_verifier_summary(const struct audit_verifier *v, struct audit_summary *ret_summary);

#endif
