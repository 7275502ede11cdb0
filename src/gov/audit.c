/*
 * audit.c - audit records, their hash chain, Ed25519 checkpoints and the export verifier.
 *
 * The hash input is the previous hash as 64 ASCII hex characters followed by the JCS bytes of
 * the record without `hash` (docs/audit.md). The verifier takes an export line by line and
 * stops at the first fault, naming the line and seq: a record must parse, carry exactly the
 * record fields with their types, follow its predecessor's seq by one, link to its hash, and
 * hash to what it says. A checkpoint record must name an earlier record by the hash that
 * record really has and carry a signature over it by the pinned (or first seen) key. It keeps
 * the hash of every record so far (64 bytes each), as a checkpoint may cover any earlier one.
 * Never trusts a field it has not checked; never prints; a bad export is a verdict, not an
 * error code.
 */
#include "audit.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hex.h"
#include "jcs.h"
#include "json.h"
#include "utf8.h"

#define RECORD_MAX_DEPTH 64
#define LINE_MAX_BYTES   ((size_t)64 << 20)
#define ZERO_HASH        "0000000000000000000000000000000000000000000000000000000000000000"

static int is_hex(const char *s, size_t want)
{
    if (!s) {
        return 0;
    }
    for (size_t i = 0; i < want; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return s[want] == '\0';
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" with plausible field ranges. */
static int is_time(const char *s, size_t len)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (len != sizeof shape - 1) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) {
            return 0;
        }
    }
    int mon = (s[5] - '0') * 10 + s[6] - '0';
    int day = (s[8] - '0') * 10 + s[9] - '0';
    int hour = (s[11] - '0') * 10 + s[12] - '0';
    int min = (s[14] - '0') * 10 + s[15] - '0';
    int sec = (s[17] - '0') * 10 + s[18] - '0';
    return mon >= 1 && mon <= 12 && day >= 1 && day <= 31 && hour <= 23 && min <= 59 && sec <= 60;
}

enum al_code audit_hash(const char *prev_hex, const char *canon, size_t len,
                        char ret_hash[AUDIT_HASH_HEX_LEN + 1], struct al_error *reterr)
{
    unsigned char md[32];
    unsigned int md_len = 0;
    enum al_code rc = AL_OK;
    EVP_MD_CTX *ctx = NULL;

    if (!is_hex(prev_hex, AUDIT_HASH_HEX_LEN) || (!canon && len > 0)) {
        return error_set(reterr, AL_CONFIG_ERROR, "audit_hash: prev is not 64 lowercase hex");
    }
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, prev_hex, AUDIT_HASH_HEX_LEN) != 1 ||
        EVP_DigestUpdate(ctx, canon, len) != 1 || EVP_DigestFinal_ex(ctx, md, &md_len) != 1 ||
        md_len != sizeof md) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "SHA-256 failed");
        goto out;
    }
    hex_encode(md, sizeof md, ret_hash);
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

static enum al_code from_buf(enum buf_status st, struct al_error *reterr)
{
    if (st == BUF_TOO_BIG) {
        return error_set(reterr, AL_OUTPUT_LIMIT, "audit record exceeds its limit");
    }
    if (st == BUF_NO_MEMORY) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    return AL_OK;
}

static enum buf_status put_member(struct buf *b, const char *key, const char *s)
{
    enum buf_status st = buf_printf(b, ",\"%s\":", key);
    if (st == BUF_OK) {
        st = s ? json_write_string(b, s, strlen(s)) : buf_append_str(b, "null");
    }
    return st;
}

/* The record as JSON text (member order irrelevant: it is canonicalized), with `hash` if set. */
static enum buf_status record_text(struct buf *b, const struct audit_record *rec, const char *hash)
{
    enum buf_status st = buf_printf(b, "{\"seq\":%" PRIu64, rec->seq);
    if (st == BUF_OK) {
        st = put_member(b, "time", rec->time);
    }
    if (st == BUF_OK) {
        st = put_member(b, "actor", rec->actor);
    }
    if (st == BUF_OK) {
        st = put_member(b, "action", rec->action);
    }
    if (st == BUF_OK) {
        st = put_member(b, "subject", rec->subject);
    }
    if (st == BUF_OK) {
        st = put_member(b, "department", rec->department);
    }
    if (st == BUF_OK) {
        st = buf_printf(b, ",\"details\":%s", rec->details ? rec->details : "{}");
    }
    if (st == BUF_OK) {
        st = put_member(b, "prev", rec->prev);
    }
    if (st == BUF_OK && hash) {
        st = put_member(b, "hash", hash);
    }
    if (st == BUF_OK) {
        st = buf_append_byte(b, '}');
    }
    return st;
}

enum al_code audit_record_write(const struct audit_record *rec, struct buf *line,
                                char ret_hash[AUDIT_HASH_HEX_LEN + 1], struct al_error *reterr)
{
    enum al_code rc = AL_OK;
    struct buf text;
    struct buf canon;
    struct json_doc *doc = NULL;
    char hash[AUDIT_HASH_HEX_LEN + 1];

    buf_init(&text, LINE_MAX_BYTES);
    buf_init(&canon, LINE_MAX_BYTES);
    if (!rec || !line) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "audit_record_write: NULL argument");
        goto out;
    }
    if (rec->seq == 0 || rec->seq > AUDIT_MAX_SEQ) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "seq %" PRIu64 " is not in 1..2^53-1", rec->seq);
        goto out;
    }
    if (!rec->time || !is_time(rec->time, strlen(rec->time))) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "time is not YYYY-MM-DDTHH:MM:SS.mmmZ");
        goto out;
    }
    if (!rec->actor || !rec->actor[0] || !rec->action || !rec->action[0] || !rec->subject) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "actor, action and subject are required");
        goto out;
    }
    if (!is_hex(rec->prev, AUDIT_HASH_HEX_LEN)) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "prev is not 64 lowercase hex digits");
        goto out;
    }
    /* details is spliced into the record's text: it must be one JSON object on its own, or
     * `{},"seq":9` would smuggle members into the record. */
    if (rec->details) {
        size_t dlen = strlen(rec->details);
        size_t i = 0;
        while (i < dlen && strchr(" \t\r\n", rec->details[i])) {
            i++;
        }
        if (json_check(rec->details, dlen, RECORD_MAX_DEPTH - 1, NULL) != AL_OK || i == dlen ||
            rec->details[i] != '{') {
            rc = error_set(reterr, AL_CONFIG_ERROR, "details is not one JSON object");
            goto out;
        }
    }
    rc = from_buf(record_text(&text, rec, NULL), reterr);
    if (rc != AL_OK) {
        goto out;
    }
    rc = json_parse(text.data, text.len, RECORD_MAX_DEPTH, &doc, reterr);
    if (rc != AL_OK) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "details is not JSON");
        goto out;
    }
    const struct json_node *details = json_get(json_root(doc), "details");
    if (!details || details->type != JSON_OBJECT) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "details is not a JSON object");
        goto out;
    }
    rc = jcs_write(&canon, json_root(doc), NULL, reterr);
    if (rc == AL_SERIALIZATION_ERROR) {
        rc = AL_CONFIG_ERROR;
    }
    if (rc != AL_OK) {
        goto out;
    }
    rc = audit_hash(rec->prev, canon.data, canon.len, hash, reterr);
    if (rc != AL_OK) {
        goto out;
    }
    /* The line: the same record with its hash, canonical too (one spelling per record). In
     * JCS order "hash" comes right before "prev"; the last `,"prev":` of the canonical text is
     * the record's own (details come before it, and the members after it are a number and
     * strings, in which a quote is always escaped), so the hash goes in there. */
    const char *prev = NULL;
    for (const char *p = canon.data; (p = strstr(p, ",\"prev\":")) != NULL; p++) {
        prev = p;
    }
    if (!prev) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "the canonical record has no prev");
        goto out;
    }
    size_t at = (size_t)(prev - canon.data);
    enum buf_status st = buf_append(line, canon.data, at);
    if (st == BUF_OK) {
        st = buf_printf(line, ",\"hash\":\"%s\"", hash);
    }
    if (st == BUF_OK) {
        st = buf_append(line, canon.data + at, canon.len - at);
    }
    rc = from_buf(st, reterr);
    if (rc != AL_OK) {
        goto out;
    }
    memcpy(ret_hash, hash, sizeof hash);
out:
    json_doc_free(doc);
    buf_done(&text);
    buf_done(&canon);
    return rc;
}

/* s[0..len) as a JSON string with each lone surrogate made U+FFFD (same length: json_parse
 * validated the rest, so nothing else changes), then `suffix`. */
static enum buf_status put_replaced_string(struct buf *b, const char *s, size_t len,
                                           const char *suffix)
{
    size_t n = 0;
    char *clean = utf8_valid_dup(s, len, 0, &n);
    struct buf text;
    buf_init(&text, n + strlen(suffix));
    enum buf_status st = clean ? buf_append(&text, clean, n) : BUF_NO_MEMORY;
    if (st == BUF_OK) {
        st = buf_append_str(&text, suffix);
    }
    if (st == BUF_OK) {
        st = json_write_string(b, text.data, text.len);
    }
    free(clean);
    buf_done(&text);
    return st;
}

/* `node` as JSON with each lone surrogate, in a string or a member name, made U+FFFD. */
static enum buf_status put_replaced(struct buf *b, const struct json_node *node)
{
    int array = node->type == JSON_ARRAY;
    if (node->type == JSON_STRING) {
        return put_replaced_string(b, node->str, node->str_len, "");
    }
    if (!array && node->type != JSON_OBJECT) {
        return buf_append(b, node->raw, node->raw_len);
    }
    enum buf_status st = buf_append_byte(b, array ? '[' : '{');
    for (const struct json_node *c = node->child; st == BUF_OK && c; c = c->next) {
        if (c != node->child) {
            st = buf_append_byte(b, ',');
        }
        if (st == BUF_OK && !array) {
            st = put_replaced_string(b, c->key, c->key_len, "");
        }
        if (st == BUF_OK && !array) {
            st = buf_append_byte(b, ':');
        }
        if (st == BUF_OK) {
            st = put_replaced(b, c);
        }
    }
    if (st == BUF_OK) {
        st = buf_append_byte(b, array ? ']' : '}');
    }
    return st;
}

/* 1 when text[0..len) is I-JSON, 0 when not, -1 when out of memory. */
static int is_ijson(const char *text, size_t len)
{
    struct json_doc *doc = NULL;
    char path[8];
    const char *why = NULL;
    enum al_code rc = json_parse(text, len, RECORD_MAX_DEPTH, &doc, NULL);
    int bad = rc == AL_OK ? json_ijson_check(json_root(doc), path, sizeof path, &why) : 1;
    json_doc_free(doc);
    return rc == AL_INTERNAL_ERROR || bad < 0 ? -1 : !bad;
}

/* The member m of details, replaced (audit_details_total): "NAME":VALUE,"NAME_sha256":HEX. */
static enum al_code put_replaced_member(struct buf *total, const struct json_node *m,
                                        struct al_error *reterr)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    struct buf value;
    buf_init(&value, total->max);
    enum buf_status st = put_replaced(&value, m);
    int ok = st == BUF_OK ? is_ijson(value.data, value.len) : 0;
    if (ok < 0) {
        st = BUF_NO_MEMORY;
    }
    if (st == BUF_OK) {
        st = put_replaced_string(total, m->key, m->key_len, "");
    }
    if (st == BUF_OK) {
        st = buf_append_byte(total, ':');
    }
    if (st == BUF_OK) {
        /* still not I-JSON (names that became equal, 1e999): only its digest is kept */
        st = ok ? buf_append(total, value.data, value.len) : buf_append_str(total, "null");
    }
    /* the digest is of what the value was, in the boundary format: compact, \udxxx kept */
    buf_reset(&value);
    if (st == BUF_OK) {
        st = json_write_compact(&value, m->raw, m->raw_len);
    }
    if (st == BUF_OK) {
        SHA256((const unsigned char *)value.data, value.len, md);
        hex_encode(md, sizeof md, hex);
        st = buf_append_byte(total, ',');
    }
    if (st == BUF_OK) {
        st = put_replaced_string(total, m->key, m->key_len, "_sha256");
    }
    if (st == BUF_OK) {
        st = buf_printf(total, ":\"%s\"", hex);
    }
    buf_done(&value);
    return from_buf(st, reterr);
}

enum al_code audit_details_total(const char *details, size_t len, struct buf *total,
                                 int *ret_changed, struct al_error *reterr)
{
    enum al_code rc = AL_OK;
    struct json_doc *doc = NULL;
    char path[8];
    const char *why = NULL;

    if (!details || !total || !ret_changed ||
        json_parse(details, len, RECORD_MAX_DEPTH - 1, &doc, NULL) != AL_OK ||
        json_root(doc)->type != JSON_OBJECT) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "details is not one JSON object");
        goto out;
    }
    const struct json_node *root = json_root(doc);
    int bad = json_ijson_check(root, path, sizeof path, &why);
    if (bad <= 0) {
        rc = bad < 0 ? error_set(reterr, AL_INTERNAL_ERROR, "out of memory") : AL_OK;
        *ret_changed = 0;
        goto out;
    }
    rc = from_buf(buf_append_byte(total, '{'), reterr);
    for (const struct json_node *m = root->child; rc == AL_OK && m; m = m->next) {
        if (m != root->child) {
            rc = from_buf(buf_append_byte(total, ','), reterr);
        }
        if (rc != AL_OK) {
            break;
        }
        bad = json_has_lone_surrogate(m->key, m->key_len);
        if (!bad) {
            bad = json_ijson_check(m, path, sizeof path, &why);
        }
        if (bad < 0) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        } else if (bad) {
            rc = put_replaced_member(total, m, reterr);
        } else {
            enum buf_status st = json_write_string(total, m->key, m->key_len);
            if (st == BUF_OK) {
                st = buf_append_byte(total, ':');
            }
            if (st == BUF_OK) {
                st = buf_append(total, m->raw, m->raw_len);
            }
            rc = from_buf(st, reterr);
        }
    }
    if (rc == AL_OK) {
        rc = from_buf(buf_append_byte(total, '}'), reterr);
    }
    if (rc == AL_OK) {
        *ret_changed = 1;
    }
out:
    json_doc_free(doc);
    return rc;
}

enum buf_status audit_checkpoint_details(struct buf *b, uint64_t seq, const char *hash_hex,
                                         const char *public_key_hex, const char *signature_hex)
{
    return buf_printf(
            b, "{\"hash\":\"%s\",\"public_key\":\"%s\",\"seq\":%" PRIu64 ",\"signature\":\"%s\"}",
            hash_hex, public_key_hex, seq, signature_hex);
}

enum buf_status audit_announce_details(struct buf *b, uint64_t seq, const char *hash_hex,
                                       const char *public_key_hex, const char *signature_hex,
                                       const char *next_key_hex)
{
    return buf_printf(
            b,
            "{\"hash\":\"%s\",\"next_public_key\":\"%s\",\"public_key\":\"%s\",\"seq\":%" PRIu64
            ",\"signature\":\"%s\"}",
            hash_hex, next_key_hex, public_key_hex, seq, signature_hex);
}

int audit_details_log_key(const char *details, char ret_hex[AUDIT_KEY_HEX_LEN + 1])
{
    static const char next_m[] = "\"next_public_key\":\"";
    static const char signer_m[] = "\"public_key\":\"";
    const char *next = details ? strstr(details, next_m) : NULL;
    const char *signer = details ? strstr(details, signer_m) : NULL;
    const char *at = next ? next + sizeof next_m - 1 : signer ? signer + sizeof signer_m - 1 : NULL;
    if (!at || strspn(at, "0123456789abcdef") < AUDIT_KEY_HEX_LEN) {
        return -1;
    }
    memcpy(ret_hex, at, AUDIT_KEY_HEX_LEN);
    ret_hex[AUDIT_KEY_HEX_LEN] = '\0';
    return 0;
}

enum al_code audit_public_key_hex(EVP_PKEY *key, char ret_hex[AUDIT_KEY_HEX_LEN + 1],
                                  struct al_error *reterr)
{
    unsigned char raw[32];
    size_t n = sizeof raw;
    if (!key || EVP_PKEY_id(key) != EVP_PKEY_ED25519 ||
        EVP_PKEY_get_raw_public_key(key, raw, &n) != 1 || n != sizeof raw) {
        return error_set(reterr, AL_CONFIG_ERROR, "not an Ed25519 key");
    }
    hex_encode(raw, sizeof raw, ret_hex);
    return AL_OK;
}

/* "airlock-audit-checkpoint\n" SEQ "\n" HASH "\n", or with a next key
 * "airlock-audit-key\n" SEQ "\n" HASH "\n" NEXT "\n": another first line, so that no
 * checkpoint's signature is ever also an announcement's. */
static int checkpoint_text(char *out, size_t cap, uint64_t seq, const char *hash_hex,
                           const char *next_hex)
{
    if (next_hex) {
        return snprintf(out, cap, "airlock-audit-key\n%" PRIu64 "\n%s\n%s\n", seq, hash_hex,
                        next_hex);
    }
    return snprintf(out, cap, "airlock-audit-checkpoint\n%" PRIu64 "\n%s\n", seq, hash_hex);
}

static enum al_code checkpoint_sign(EVP_PKEY *key, uint64_t seq, const char *hash_hex,
                                    const char *next_hex, char ret_sig[AUDIT_SIG_HEX_LEN + 1],
                                    struct al_error *reterr)
{
    char msg[256];
    unsigned char sig[64];
    size_t sig_len = sizeof sig;
    enum al_code rc = AL_OK;
    EVP_MD_CTX *ctx = NULL;

    if (seq == 0 || seq > AUDIT_MAX_SEQ || !is_hex(hash_hex, AUDIT_HASH_HEX_LEN) || !key ||
        EVP_PKEY_id(key) != EVP_PKEY_ED25519 ||
        (next_hex && !is_hex(next_hex, AUDIT_KEY_HEX_LEN))) {
        return error_set(reterr, AL_CONFIG_ERROR, "checkpoint: bad seq, hash or key");
    }
    int n = checkpoint_text(msg, sizeof msg, seq, hash_hex, next_hex);
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1 ||
        EVP_DigestSign(ctx, sig, &sig_len, (const unsigned char *)msg, (size_t)n) != 1 ||
        sig_len != sizeof sig) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "Ed25519 signing failed");
        goto out;
    }
    hex_encode(sig, sizeof sig, ret_sig);
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

enum al_code audit_checkpoint_sign(EVP_PKEY *key, uint64_t seq, const char *hash_hex,
                                   char ret_sig[AUDIT_SIG_HEX_LEN + 1], struct al_error *reterr)
{
    return checkpoint_sign(key, seq, hash_hex, NULL, ret_sig, reterr);
}

enum al_code audit_announce_sign(EVP_PKEY *key, uint64_t seq, const char *hash_hex,
                                 const char *next_key_hex, char ret_sig[AUDIT_SIG_HEX_LEN + 1],
                                 struct al_error *reterr)
{
    if (!next_key_hex) {
        return error_set(reterr, AL_CONFIG_ERROR, "announcement: no next key");
    }
    return checkpoint_sign(key, seq, hash_hex, next_key_hex, ret_sig, reterr);
}

static enum al_code checkpoint_verify(const char *public_key_hex, uint64_t seq,
                                      const char *hash_hex, const char *next_hex,
                                      const char *signature_hex, int *ret_valid,
                                      struct al_error *reterr)
{
    char msg[256];
    unsigned char raw[32];
    unsigned char sig[64];
    enum al_code rc = AL_OK;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *ctx = NULL;

    if (!is_hex(public_key_hex, AUDIT_KEY_HEX_LEN) || !is_hex(signature_hex, AUDIT_SIG_HEX_LEN) ||
        !is_hex(hash_hex, AUDIT_HASH_HEX_LEN) || !ret_valid ||
        (next_hex && !is_hex(next_hex, AUDIT_KEY_HEX_LEN))) {
        return error_set(reterr, AL_CONFIG_ERROR, "checkpoint: key, signature or hash not hex");
    }
    hex_decode(public_key_hex, sizeof raw, raw);
    hex_decode(signature_hex, sizeof sig, sig);
    int n = checkpoint_text(msg, sizeof msg, seq, hash_hex, next_hex);
    key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, sizeof raw);
    if (!key) {
        /* Not a point on the curve: no signature can verify under it. */
        *ret_valid = 0;
        goto out;
    }
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) != 1) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "Ed25519 verification failed to start");
        goto out;
    }
    *ret_valid = EVP_DigestVerify(ctx, sig, sizeof sig, (const unsigned char *)msg, (size_t)n) == 1;
out:
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    return rc;
}

enum al_code audit_checkpoint_verify(const char *public_key_hex, uint64_t seq, const char *hash_hex,
                                     const char *signature_hex, int *ret_valid,
                                     struct al_error *reterr)
{
    return checkpoint_verify(public_key_hex, seq, hash_hex, NULL, signature_hex, ret_valid, reterr);
}

enum al_code audit_announce_verify(const char *public_key_hex, uint64_t seq, const char *hash_hex,
                                   const char *next_key_hex, const char *signature_hex,
                                   int *ret_valid, struct al_error *reterr)
{
    if (!next_key_hex) {
        return error_set(reterr, AL_CONFIG_ERROR, "announcement: no next key");
    }
    return checkpoint_verify(public_key_hex, seq, hash_hex, next_key_hex, signature_hex, ret_valid,
                             reterr);
}

const char *audit_fault_name(enum audit_fault fault)
{
    switch (fault) {
    case AUDIT_FAULT_NONE:
        return "ok";
    case AUDIT_FAULT_MALFORMED:
        return "malformed record";
    case AUDIT_FAULT_SEQ:
        return "bad seq";
    case AUDIT_FAULT_PREV:
        return "broken prev link";
    case AUDIT_FAULT_HASH:
        return "hash mismatch";
    case AUDIT_FAULT_CHECKPOINT:
        return "checkpoint does not match the chain";
    case AUDIT_FAULT_SIGNATURE:
        return "bad checkpoint signature";
    case AUDIT_FAULT_KEY:
        return "checkpoint key not the expected key";
    case AUDIT_FAULT_UNSEALED:
        return "unsealed tail";
    case AUDIT_FAULT_EMPTY:
        return "empty export";
    case AUDIT_FAULT_TRUNCATED:
        return "export ends before the kept checkpoint";
    case AUDIT_FAULT_INTERNAL:
        return "internal error";
    }
    return "unknown fault";
}

struct audit_verifier {
    unsigned flags;
    char pinned[AUDIT_KEY_HEX_LEN + 1]; /* "" when not pinned */
    char key[AUDIT_KEY_HEX_LEN + 1];    /* the key the chain is at, once a checkpoint is seen */
    char chain[AUDIT_CHAIN_MAX][AUDIT_KEY_HEX_LEN + 1]; /* every key so far, the first first */
    size_t nchain;
    int pin_signed;    /* a checkpoint signed with the pinned key was seen */
    char *hashes;      /* AUDIT_HASH_HEX_LEN bytes per record, seq base first */
    size_t hashes_cap; /* records the array holds room for */
    uint64_t base;     /* the first seq in hashes: 1, or where it started at */
    size_t line;       /* lines fed so far */
    uint64_t last_seq;
    uint64_t checkpoints;
    uint64_t sealed_seq;
    int last_is_seal; /* the last record is a checkpoint of the record before it */
    struct audit_problem problem;
    struct { /* audit_verifier_expect's checkpoint; seq 0: none */
        uint64_t seq;
        char hash[AUDIT_HASH_HEX_LEN + 1];
        char key[AUDIT_KEY_HEX_LEN + 1];
        char sig[AUDIT_SIG_HEX_LEN + 1];
    } kept;
};

enum al_code audit_verifier_new(const char *pinned_key_hex, unsigned flags,
                                struct audit_verifier **ret_verifier, struct al_error *reterr)
{
    if (!ret_verifier) {
        return error_set(reterr, AL_CONFIG_ERROR, "audit_verifier_new: NULL argument");
    }
    if (pinned_key_hex && !is_hex(pinned_key_hex, AUDIT_KEY_HEX_LEN)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "the public key is not 64 lowercase hex digits (a raw Ed25519 key)");
    }
    struct audit_verifier *v = calloc(1, sizeof *v);
    if (!v) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    v->flags = flags;
    v->base = 1;
    if (pinned_key_hex) {
        memcpy(v->pinned, pinned_key_hex, AUDIT_KEY_HEX_LEN + 1);
    }
    *ret_verifier = v;
    return AL_OK;
}

void audit_verifier_free(struct audit_verifier *v)
{
    if (!v) {
        return;
    }
    free(v->hashes);
    free(v);
}

static enum audit_fault fail(struct audit_verifier *v, enum audit_fault fault, uint64_t seq,
                             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum audit_fault fail(struct audit_verifier *v, enum audit_fault fault, uint64_t seq,
                             const char *fmt, ...)
{
    va_list ap;
    v->problem.fault = fault;
    v->problem.seq = seq;
    v->problem.line = v->line;
    va_start(ap, fmt);
    vsnprintf(v->problem.why, sizeof v->problem.why, fmt, ap);
    va_end(ap);
    return fault;
}

static const char *hash_of(const struct audit_verifier *v, uint64_t seq)
{
    return v->hashes + (size_t)(seq - v->base) * AUDIT_HASH_HEX_LEN;
}

/* Room for the hash of `seq` (hashes grow by doubling). */
static int hash_room(struct audit_verifier *v, uint64_t seq)
{
    size_t need = (size_t)(seq - v->base) + 1;
    if (need <= v->hashes_cap) {
        return 0;
    }
    size_t cap = v->hashes_cap ? v->hashes_cap * 2 : 1024;
    while (cap < need) {
        cap *= 2;
    }
    char *grown = realloc(v->hashes, cap * AUDIT_HASH_HEX_LEN);
    if (!grown) {
        return -1;
    }
    v->hashes = grown;
    v->hashes_cap = cap;
    return 0;
}

enum al_code audit_verifier_start_at(struct audit_verifier *v, uint64_t seq, const char *hash_hex,
                                     struct al_error *reterr)
{
    if (v->line > 0 || seq > AUDIT_MAX_SEQ || (seq > 0 && !is_hex(hash_hex, AUDIT_HASH_HEX_LEN))) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "audit_verifier_start_at: after a line, or not a seq and its hash");
    }
    if (seq == 0) {
        return AL_OK;
    }
    v->base = seq;
    if (hash_room(v, seq) != 0) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    memcpy(v->hashes, hash_hex, AUDIT_HASH_HEX_LEN);
    v->last_seq = seq;
    return AL_OK;
}

/* A JSON integer in 1..AUDIT_MAX_SEQ written as plain digits. */
static int get_seq(const struct json_node *n, uint64_t *ret)
{
    if (!n || n->type != JSON_NUMBER || n->raw_len == 0 || n->raw_len > 16) {
        return 0;
    }
    uint64_t s = 0;
    for (size_t i = 0; i < n->raw_len; i++) {
        if (n->raw[i] < '0' || n->raw[i] > '9') {
            return 0;
        }
        s = s * 10 + (uint64_t)(n->raw[i] - '0');
    }
    if (s == 0 || s > AUDIT_MAX_SEQ) {
        return 0;
    }
    *ret = s;
    return 1;
}

static int is_str(const struct json_node *n)
{
    return n && n->type == JSON_STRING && strlen(n->str) == n->str_len;
}

/* The checks of a checkpoint record's details; `seq` is the checkpoint record's own. */
static enum audit_fault check_checkpoint(struct audit_verifier *v, uint64_t seq,
                                         const struct json_node *details)
{
    static const char *const keys[] = { "seq", "hash", "public_key", "signature",
                                        "next_public_key" };
    const struct json_node *cseq = json_get(details, "seq");
    const struct json_node *chash = json_get(details, "hash");
    const struct json_node *ckey = json_get(details, "public_key");
    const struct json_node *csig = json_get(details, "signature");
    const struct json_node *cnext = json_get(details, "next_public_key");
    uint64_t covered = 0;
    int valid = 0;

    for (const struct json_node *m = details->child; m; m = m->next) {
        int known = 0;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            known |= strcmp(m->key, keys[i]) == 0;
        }
        if (!known) {
            return fail(v, AUDIT_FAULT_MALFORMED, seq,
                        "checkpoint details has unknown member "
                        "\"%.64s\"",
                        m->key);
        }
    }
    if (!get_seq(cseq, &covered) || !is_str(chash) || !is_hex(chash->str, AUDIT_HASH_HEX_LEN) ||
        !is_str(ckey) || !is_hex(ckey->str, AUDIT_KEY_HEX_LEN) || !is_str(csig) ||
        !is_hex(csig->str, AUDIT_SIG_HEX_LEN)) {
        return fail(v, AUDIT_FAULT_MALFORMED, seq,
                    "checkpoint details must be {seq, hash, public_key, signature} "
                    "(seq an integer, the others lowercase hex of 64, 64 and 128 digits)");
    }
    if (cnext && (!is_str(cnext) || !is_hex(cnext->str, AUDIT_KEY_HEX_LEN) ||
                  strcmp(cnext->str, ckey->str) == 0)) {
        return fail(v, AUDIT_FAULT_MALFORMED, seq,
                    "checkpoint next_public_key must be another key, as 64 lowercase hex digits");
    }
    if (covered >= seq) {
        return fail(v, AUDIT_FAULT_CHECKPOINT, seq,
                    "checkpoint covers seq %" PRIu64 ", which is not an earlier record", covered);
    }
    if (covered < v->base) {
        /* airlockd seals the record just before: this one names one verified earlier */
        return fail(v, AUDIT_FAULT_CHECKPOINT, seq,
                    "checkpoint covers seq %" PRIu64 ", before the verified head at seq %" PRIu64,
                    covered, v->base);
    }
    if (memcmp(hash_of(v, covered), chash->str, AUDIT_HASH_HEX_LEN) != 0) {
        return fail(v, AUDIT_FAULT_CHECKPOINT, seq,
                    "checkpoint signs hash %.16s... for seq %" PRIu64
                    ", but that record's hash is %.16s...",
                    chash->str, covered, hash_of(v, covered));
    }
    /* The chain of keys starts at the pinned key (or, with AUDIT_PIN_IN_CHAIN or unpinned, at
     * the first checkpoint's) and moves on only where its key announces the next one. */
    int pin_first = v->pinned[0] && !(v->flags & AUDIT_PIN_IN_CHAIN);
    if (!v->key[0] && pin_first && strcmp(v->pinned, ckey->str) != 0) {
        return fail(v, AUDIT_FAULT_KEY, seq,
                    "checkpoint key %.16s... is not the pinned key %.16s...", ckey->str, v->pinned);
    }
    if (v->key[0] && strcmp(v->key, ckey->str) != 0) {
        int at_pin = v->pinned[0] && strcmp(v->key, v->pinned) == 0;
        return fail(v, AUDIT_FAULT_KEY, seq,
                    "checkpoint key %.16s... is not %s %.16s... (a new key is announced by a "
                    "checkpoint signed with the one before)",
                    ckey->str,
                    at_pin          ? "the pinned key"
                    : v->nchain > 1 ? "the key the chain of announced keys is at"
                                    : "the earlier checkpoints' key",
                    v->key);
    }
    enum al_code vrc = cnext ? audit_announce_verify(ckey->str, covered, chash->str, cnext->str,
                                                     csig->str, &valid, NULL)
                             : audit_checkpoint_verify(ckey->str, covered, chash->str, csig->str,
                                                       &valid, NULL);
    if (vrc != AL_OK) {
        return fail(v, AUDIT_FAULT_INTERNAL, seq, "Ed25519 verification failed to run");
    }
    if (!valid) {
        return fail(v, AUDIT_FAULT_SIGNATURE, seq,
                    "checkpoint signature over seq %" PRIu64 "%s does not verify", covered,
                    cnext ? " and the next key" : "");
    }
    if (!v->key[0]) {
        memcpy(v->chain[0], ckey->str, AUDIT_KEY_HEX_LEN + 1);
        v->nchain = 1;
    }
    memcpy(v->key, ckey->str, AUDIT_KEY_HEX_LEN + 1);
    v->pin_signed |= v->pinned[0] && strcmp(v->pinned, ckey->str) == 0;
    if (cnext) {
        if (v->nchain == AUDIT_CHAIN_MAX) {
            return fail(v, AUDIT_FAULT_KEY, seq, "more than %d keys in one chain", AUDIT_CHAIN_MAX);
        }
        memcpy(v->chain[v->nchain++], cnext->str, AUDIT_KEY_HEX_LEN + 1);
        memcpy(v->key, cnext->str, AUDIT_KEY_HEX_LEN + 1);
    }
    v->checkpoints++;
    if (covered > v->sealed_seq) {
        v->sealed_seq = covered;
    }
    v->last_is_seal = covered == seq - 1;
    return AUDIT_FAULT_NONE;
}

static enum audit_fault check_record(struct audit_verifier *v, const struct json_node *root)
{
    static const char *const keys[] = { "seq",        "time",    "actor", "action", "subject",
                                        "department", "details", "prev",  "hash" };
    enum audit_fault f = AUDIT_FAULT_NONE;
    struct buf canon;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    uint64_t seq = 0;

    buf_init(&canon, LINE_MAX_BYTES);
    if (root->type != JSON_OBJECT) {
        f = fail(v, AUDIT_FAULT_MALFORMED, 0, "the line is not a JSON object");
        goto out;
    }
    const struct json_node *jseq = json_get(root, "seq");
    int has_seq = get_seq(jseq, &seq);
    for (const struct json_node *m = root->child; m; m = m->next) {
        int known = 0;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            known |= strcmp(m->key, keys[i]) == 0;
        }
        if (!known) {
            f = fail(v, AUDIT_FAULT_MALFORMED, seq, "unknown member \"%.64s\"", m->key);
            goto out;
        }
    }
    const struct json_node *time = json_get(root, "time");
    const struct json_node *actor = json_get(root, "actor");
    const struct json_node *action = json_get(root, "action");
    const struct json_node *subject = json_get(root, "subject");
    const struct json_node *dept = json_get(root, "department");
    const struct json_node *details = json_get(root, "details");
    const struct json_node *prev = json_get(root, "prev");
    const struct json_node *jhash = json_get(root, "hash");
    const char *bad = !has_seq                                                    ? "seq"
                      : !is_str(time) || !is_time(time->str, time->str_len)       ? "time"
                      : !is_str(actor) || actor->str_len == 0                     ? "actor"
                      : !is_str(action) || action->str_len == 0                   ? "action"
                      : !is_str(subject)                                          ? "subject"
                      : !dept || (dept->type != JSON_NULL && !is_str(dept))       ? "department"
                      : !details || details->type != JSON_OBJECT                  ? "details"
                      : !is_str(prev) || !is_hex(prev->str, AUDIT_HASH_HEX_LEN)   ? "prev"
                      : !is_str(jhash) || !is_hex(jhash->str, AUDIT_HASH_HEX_LEN) ? "hash"
                                                                                  : NULL;
    if (bad) {
        f = fail(v, AUDIT_FAULT_MALFORMED, seq, "member \"%s\" is missing or malformed", bad);
        goto out;
    }
    if (seq != v->last_seq + 1) {
        if (seq > v->last_seq + 1) {
            f = fail(v, AUDIT_FAULT_SEQ, seq,
                     "seq gap: expected seq %" PRIu64 ", found %" PRIu64
                     " (a record is missing or out of order)",
                     v->last_seq + 1, seq);
        } else if (seq == v->last_seq) {
            f = fail(v, AUDIT_FAULT_SEQ, seq, "duplicate seq %" PRIu64, seq);
        } else {
            f = fail(v, AUDIT_FAULT_SEQ, seq, "out of order: seq %" PRIu64 " after seq %" PRIu64,
                     seq, v->last_seq);
        }
        goto out;
    }
    const char *want_prev = seq == 1 ? ZERO_HASH : hash_of(v, seq - 1);
    if (memcmp(prev->str, want_prev, AUDIT_HASH_HEX_LEN) != 0) {
        f = fail(v, AUDIT_FAULT_PREV, seq,
                 "prev %.16s... is not the hash of seq %" PRIu64 " (%.16s...)", prev->str, seq - 1,
                 want_prev);
        goto out;
    }
    struct al_error err = { 0 };
    enum al_code rc = jcs_write(&canon, root, "hash", &err);
    if (rc == AL_SERIALIZATION_ERROR) {
        f = fail(v, AUDIT_FAULT_MALFORMED, seq, "no canonical form: %s", err.message);
        goto out;
    }
    if (rc == AL_OK) {
        rc = audit_hash(prev->str, canon.data, canon.len, hash, &err);
    }
    if (rc != AL_OK) {
        f = fail(v, AUDIT_FAULT_INTERNAL, seq, "%s", err.message);
        goto out;
    }
    if (CRYPTO_memcmp(hash, jhash->str, AUDIT_HASH_HEX_LEN) != 0) {
        f = fail(v, AUDIT_FAULT_HASH, seq,
                 "hash mismatch: the record says %.16s..., its content hashes to %.16s...",
                 jhash->str, hash);
        goto out;
    }
    if (hash_room(v, seq) != 0) {
        f = fail(v, AUDIT_FAULT_INTERNAL, seq, "out of memory");
        goto out;
    }
    memcpy(v->hashes + (size_t)(seq - v->base) * AUDIT_HASH_HEX_LEN, hash, AUDIT_HASH_HEX_LEN);
    v->last_seq = seq;
    v->last_is_seal = 0;
    if (strcmp(action->str, AUDIT_CHECKPOINT_ACTION) == 0) {
        f = check_checkpoint(v, seq, details);
    }
out:
    buf_done(&canon);
    return f;
}

enum audit_fault audit_verifier_line(struct audit_verifier *v, const char *line, size_t len,
                                     struct audit_problem *ret_problem)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    enum audit_fault f = AUDIT_FAULT_NONE;

    if (v->problem.fault != AUDIT_FAULT_NONE) {
        f = v->problem.fault;
        goto out;
    }
    v->line++;
    if (json_parse(line, len, RECORD_MAX_DEPTH, &doc, &err) != AL_OK) {
        f = fail(v, AUDIT_FAULT_MALFORMED, 0, "not JSON: %s", err.message);
        goto out;
    }
    f = check_record(v, json_root(doc));
out:
    json_doc_free(doc);
    if (f != AUDIT_FAULT_NONE && ret_problem) {
        *ret_problem = v->problem;
    }
    return f;
}

enum al_code audit_verifier_expect(struct audit_verifier *v, uint64_t seq, const char *hash_hex,
                                   const char *public_key_hex, const char *signature_hex,
                                   struct al_error *reterr)
{
    if (seq == 0 || seq > AUDIT_MAX_SEQ || !is_hex(hash_hex, AUDIT_HASH_HEX_LEN) ||
        !is_hex(public_key_hex, AUDIT_KEY_HEX_LEN) || !is_hex(signature_hex, AUDIT_SIG_HEX_LEN)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "the checkpoint needs a seq from 1, a hash, a public_key and a signature "
                         "in lowercase hex");
    }
    v->kept.seq = seq;
    memcpy(v->kept.hash, hash_hex, sizeof v->kept.hash);
    memcpy(v->kept.key, public_key_hex, sizeof v->kept.key);
    memcpy(v->kept.sig, signature_hex, sizeof v->kept.sig);
    return AL_OK;
}

/* The kept checkpoint against the whole export: it was signed by the export's key and the
 * export reaches it with the same record (a cut or a rewrite after it is kept shows here). */
static enum audit_fault check_kept(struct audit_verifier *v)
{
    uint64_t seq = v->kept.seq;
    const char *want = v->pinned[0] ? v->pinned : v->key;
    int valid = 0;
    int in_chain = 0;
    for (size_t i = 0; i < v->nchain; i++) {
        in_chain |= strcmp(v->chain[i], v->kept.key) == 0;
    }
    if (want[0] && !in_chain && strcmp(want, v->kept.key) != 0) {
        return fail(v, AUDIT_FAULT_KEY, seq,
                    "the kept checkpoint's key %.16s... is not %s %.16s...", v->kept.key,
                    v->pinned[0] ? "the pinned key" : "the export's key", want);
    }
    if (audit_checkpoint_verify(v->kept.key, seq, v->kept.hash, v->kept.sig, &valid, NULL) !=
        AL_OK) {
        return fail(v, AUDIT_FAULT_INTERNAL, seq, "Ed25519 verification failed to run");
    }
    if (!valid) {
        return fail(v, AUDIT_FAULT_SIGNATURE, seq,
                    "the kept checkpoint's signature over seq %" PRIu64 " does not verify", seq);
    }
    if (v->last_seq < seq) {
        return fail(v, AUDIT_FAULT_TRUNCATED, seq,
                    "the export ends at seq %" PRIu64 ", before seq %" PRIu64
                    " of the kept checkpoint: records after seq %" PRIu64 " were removed",
                    v->last_seq, seq, v->last_seq);
    }
    if (seq < v->base || memcmp(hash_of(v, seq), v->kept.hash, AUDIT_HASH_HEX_LEN) != 0) {
        return fail(v, AUDIT_FAULT_CHECKPOINT, seq,
                    "the kept checkpoint signs hash %.16s... for seq %" PRIu64
                    ", but the export's record there %s: the log was rewritten",
                    v->kept.hash, seq, seq < v->base ? "is not in it" : "hashes otherwise");
    }
    return AUDIT_FAULT_NONE;
}

enum audit_fault audit_kept_compare(uint64_t kept_seq, const char *kept_hash, uint64_t last_seq,
                                    const char *stored_hash, struct audit_problem *ret_problem)
{
    struct audit_problem p;
    memset(&p, 0, sizeof p);
    p.fault = AUDIT_FAULT_TRUNCATED;
    if (last_seq < kept_seq) {
        /* deleting records, their checkpoints among them, leaves a shorter chain that is whole */
        p.seq = last_seq + 1;
        snprintf(p.why, sizeof p.why,
                 "the log ends at seq %" PRIu64 ", before the checkpoint of seq %" PRIu64
                 " (hash %.64s) kept outside it: records %" PRIu64 " to %" PRIu64 " are missing",
                 last_seq, kept_seq, kept_hash, last_seq + 1, kept_seq);
    } else if (!stored_hash || strcmp(stored_hash, kept_hash) != 0) {
        /* cut and written again: the chain is whole, but not the one that was signed */
        p.seq = kept_seq;
        snprintf(p.why, sizeof p.why,
                 "the record at seq %" PRIu64 " is not the one the checkpoint kept outside the "
                 "log signs (hash %.64s): the log was cut and written again",
                 kept_seq, kept_hash);
    } else {
        p.fault = AUDIT_FAULT_NONE;
    }
    if (p.fault != AUDIT_FAULT_NONE && ret_problem) {
        *ret_problem = p;
    }
    return p.fault;
}

enum audit_fault audit_verifier_finish(struct audit_verifier *v, struct audit_problem *ret_problem)
{
    enum audit_fault f = v->problem.fault;
    if (f == AUDIT_FAULT_NONE && v->last_seq == 0) {
        f = fail(v, AUDIT_FAULT_EMPTY, 0, "the export holds no records");
        v->problem.line = 0;
    } else if (f == AUDIT_FAULT_NONE && v->pinned[0] && v->key[0] && !v->pin_signed) {
        /* AUDIT_PIN_IN_CHAIN: the records before the pinned key's announcement are trusted
         * through the hash chain a checkpoint of the pinned key covers, so one is needed */
        f = fail(v, AUDIT_FAULT_KEY, v->last_seq,
                 "no checkpoint is signed with the pinned key %.16s... (the chain of keys ends "
                 "at %.16s...)",
                 v->pinned, v->key);
        v->problem.line = 0;
    } else if (f == AUDIT_FAULT_NONE && v->kept.seq && (f = check_kept(v)) != AUDIT_FAULT_NONE) {
        v->problem.line = 0;
    } else if (f == AUDIT_FAULT_NONE && !v->last_is_seal && !(v->flags & AUDIT_ALLOW_UNSEALED)) {
        f = fail(v, AUDIT_FAULT_UNSEALED, v->last_seq,
                 "the export ends at seq %" PRIu64 " without a checkpoint of its last record: "
                 "records after seq %" PRIu64 " could have been removed or rewritten unseen",
                 v->last_seq, v->sealed_seq);
    }
    if (f != AUDIT_FAULT_NONE && ret_problem) {
        *ret_problem = v->problem;
    }
    return f;
}

void audit_verifier_summary(const struct audit_verifier *v, struct audit_summary *ret_summary)
{
    memset(ret_summary, 0, sizeof *ret_summary);
    ret_summary->records = v->last_seq;
    ret_summary->checkpoints = v->checkpoints;
    ret_summary->last_seq = v->last_seq;
    ret_summary->sealed_seq = v->sealed_seq;
    if (v->last_seq > 0) {
        memcpy(ret_summary->last_hash, hash_of(v, v->last_seq), AUDIT_HASH_HEX_LEN);
    }
    memcpy(ret_summary->key, v->key, sizeof v->key);
    ret_summary->keys = v->nchain;
    ret_summary->key_pinned = v->pinned[0] != '\0';
    ret_summary->kept_seq = v->kept.seq;
}
