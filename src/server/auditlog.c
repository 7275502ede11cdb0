/*
 * auditlog.c - the checkpoint key and the check of the stored chain. The key file holds the
 * raw private key as hex and is written once, 0600, with O_EXCL so two starts never race to
 * different keys. Verification trusts nothing stored: each line goes through the same verifier
 * as `airlock audit verify`, and each row is rebuilt from its columns, so an edit of a column
 * the listing filters on shows as well as an edit of the line itself.
 */
#include "auditlog.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "error.h"
#include "keyfile.h"

#define AUDITLOG_SEED_LEN 32

int auditlog_key_load(const char *data_dir, EVP_PKEY **ret_key, struct al_error *reterr)
{
    /* an Ed25519 private key is 32 random bytes: kept like every key of the data directory */
    unsigned char seed[AUDITLOG_SEED_LEN];
    int rc = keyfile_load(data_dir, "audit.key", "AIRLOCK_AUDIT_KEY", sizeof seed, seed, reterr);
    if (rc == 0) {
        *ret_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof seed);
        if (!*ret_key) {
            error_set(reterr, AL_INTERNAL_ERROR, "the audit key is not an Ed25519 private key");
            rc = -1;
        }
    }
    OPENSSL_cleanse(seed, sizeof seed);
    return rc;
}

/* A verification in progress. */
struct auditlog_check {
    struct audit_verifier *v;
    struct auditlog_result ret;
    struct buf rebuilt;
    int64_t last_seq; /* the last record read */
    int64_t end;      /* stop after this seq; 0: at the log's end */
    int done;
};

/* reason: "what: why", or "what" alone when why is NULL */
static void auditlog_bad(struct auditlog_check *c, int64_t seq, const char *what, const char *why)
{
    c->ret.ok = 0;
    c->ret.first_bad_seq = seq;
    snprintf(c->ret.reason, sizeof c->ret.reason, "%s%s%s", what, why ? ": " : "", why ? why : "");
    c->done = 1;
}

static int auditlog_row(void *userdata, const struct store_audit *a)
{
    struct auditlog_check *c = userdata;
    struct audit_problem p;
    struct al_error err;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    const char *line = a->line ? a->line : "";
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    if (c->end > 0 && a->seq > c->end) {
        c->done = 1;
        return 1;
    }
    enum audit_fault fault = audit_verifier_line(c->v, line, strlen(line), &p);
    if (fault != AUDIT_FAULT_NONE) {
        auditlog_bad(c, p.seq ? (int64_t)p.seq : a->seq, audit_fault_name(fault), p.why);
        return 1;
    }
    /* The columns must say what the line says. */
    struct audit_record rec = { (uint64_t)a->seq,
                                a->time,
                                a->actor,
                                a->action,
                                a->subject ? a->subject : "",
                                a->department,
                                a->details,
                                a->prev ? a->prev : "" };
    buf_reset(&c->rebuilt);
    if (audit_record_write(&rec, &c->rebuilt, hash, &err) != AL_OK ||
        c->rebuilt.len != strlen(line) || memcmp(c->rebuilt.data, line, c->rebuilt.len) != 0) {
        auditlog_bad(c, a->seq, "the stored columns do not match the record's line", NULL);
        return 1;
    }
    c->ret.records++;
    c->last_seq = a->seq;
    snprintf(c->ret.head, sizeof c->ret.head, "%s", a->hash ? a->hash : "");
    return 0;
}

int auditlog_check_new(const char *public_key_hex, int64_t from_seq, const char *from_hash,
                       int64_t end, struct auditlog_check **ret)
{
    struct auditlog_check *c = calloc(1, sizeof *c);
    if (!c) {
        return -1;
    }
    c->ret.ok = 1;
    c->ret.records = from_seq;
    c->last_seq = from_seq;
    c->end = end;
    if (from_seq > 0) {
        snprintf(c->ret.head, sizeof c->ret.head, "%s", from_hash);
    }
    buf_init(&c->rebuilt, (size_t)1 << 20);
    if (audit_verifier_new(public_key_hex, AUDIT_ALLOW_UNSEALED, &c->v, NULL) != AL_OK ||
        audit_verifier_start_at(c->v, (uint64_t)from_seq, from_hash, NULL) != AL_OK) {
        auditlog_check_free(c);
        return -1;
    }
    *ret = c;
    return 0;
}

void auditlog_check_free(struct auditlog_check *c)
{
    if (c) {
        audit_verifier_free(c->v);
        buf_done(&c->rebuilt);
        free(c);
    }
}

enum store_rc auditlog_check_step(struct auditlog_check *c, struct store *s, int64_t max,
                                  int *ret_done)
{
    enum store_rc rc = STORE_OK;
    if (!c->done) {
        int64_t before = c->ret.records;
        int64_t want = c->end > 0 && c->end - c->last_seq < max ? c->end - c->last_seq : max;
        rc = want > 0 ? s->ops->audit_list(s, c->last_seq, want, auditlog_row, c) : STORE_OK;
        if (rc == STORE_OK &&
            (c->ret.records == before || c->last_seq == c->end || c->ret.records - before < want)) {
            c->done = 1;
        }
    }
    if (rc == STORE_OK && c->done && c->ret.ok && c->ret.records > 0) {
        struct audit_problem p;
        memset(&p, 0, sizeof p);
        enum audit_fault fault = audit_verifier_finish(c->v, &p);
        if (fault != AUDIT_FAULT_NONE) {
            auditlog_bad(c, (int64_t)p.seq, audit_fault_name(fault), p.why);
        }
    }
    *ret_done = c->done;
    return rc;
}

void auditlog_check_result(const struct auditlog_check *c, struct auditlog_result *ret)
{
    *ret = c->ret;
}

enum store_rc auditlog_verify(struct store *s, const char *public_key_hex,
                              struct auditlog_result *ret)
{
    struct auditlog_check *c = NULL;
    int done = 0;
    enum store_rc rc = STORE_OK;
    memset(ret, 0, sizeof *ret);
    if (auditlog_check_new(public_key_hex, 0, NULL, 0, &c) != 0) {
        snprintf(ret->reason, sizeof ret->reason, "cannot start the verifier");
        return STORE_OK;
    }
    while (rc == STORE_OK && !done) {
        rc = auditlog_check_step(c, s, 1000, &done);
    }
    auditlog_check_result(c, ret);
    auditlog_check_free(c);
    return rc;
}
