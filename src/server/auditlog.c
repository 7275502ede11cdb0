/*
 * auditlog.c - the checkpoint key and the check of the stored chain. The key file holds the
 * raw private key as hex and is written once, 0600, with O_EXCL so two starts never race to
 * different keys. Verification trusts nothing stored: each line goes through the same verifier
 * as `airlock audit verify`, and each row is rebuilt from its columns, so an edit of a column
 * the listing filters on shows as well as an edit of the line itself.
 */
#include "auditlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "keyfile.h"

#define AUDITLOG_SEED_LEN 32

int auditlog_key_load(const char *data_dir, EVP_PKEY **ret_key, char *err)
{
    /* an Ed25519 private key is 32 random bytes: kept like every key of the data directory */
    unsigned char seed[AUDITLOG_SEED_LEN];
    int rc = keyfile_load(data_dir, "audit.key", "AIRLOCK_AUDIT_KEY", sizeof seed, seed, err);
    if (rc == 0) {
        *ret_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof seed);
        if (!*ret_key) {
            snprintf(err, 256, "the audit key is not an Ed25519 private key");
            rc = -1;
        }
    }
    OPENSSL_cleanse(seed, sizeof seed);
    return rc;
}

struct auditlog_walk {
    struct audit_verifier *v;
    struct auditlog_result *ret;
    struct buf rebuilt;
    int64_t last_seq;
    int done;
};

/* reason: "what: why", or "what" alone when why is NULL */
static void auditlog_bad(struct auditlog_walk *w, int64_t seq, const char *what, const char *why)
{
    w->ret->ok = 0;
    w->ret->first_bad_seq = seq;
    snprintf(w->ret->reason, sizeof w->ret->reason, "%s%s%s", what, why ? ": " : "",
             why ? why : "");
    w->done = 1;
}

static int auditlog_row(void *userdata, const struct store_audit *a)
{
    struct auditlog_walk *w = userdata;
    struct audit_problem p;
    struct al_error err;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    const char *line = a->line ? a->line : "";
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    enum audit_fault fault = audit_verifier_line(w->v, line, strlen(line), &p);
    if (fault != AUDIT_FAULT_NONE) {
        auditlog_bad(w, p.seq ? (int64_t)p.seq : a->seq, audit_fault_name(fault), p.why);
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
    buf_reset(&w->rebuilt);
    if (audit_record_write(&rec, &w->rebuilt, hash, &err) != AL_OK ||
        w->rebuilt.len != strlen(line) || memcmp(w->rebuilt.data, line, w->rebuilt.len) != 0) {
        auditlog_bad(w, a->seq, "the stored columns do not match the record's line", NULL);
        return 1;
    }
    w->ret->records++;
    w->last_seq = a->seq;
    snprintf(w->ret->head, sizeof w->ret->head, "%s", a->hash ? a->hash : "");
    return 0;
}

enum store_rc auditlog_verify(struct store *s, const char *public_key_hex,
                              struct auditlog_result *ret)
{
    struct auditlog_walk w;
    struct audit_problem p;
    enum store_rc rc = STORE_OK;
    memset(&w, 0, sizeof w);
    memset(ret, 0, sizeof *ret);
    memset(&p, 0, sizeof p);
    ret->ok = 1;
    w.ret = ret;
    buf_init(&w.rebuilt, (size_t)1 << 20);
    if (audit_verifier_new(public_key_hex, AUDIT_ALLOW_UNSEALED, &w.v, NULL) != AL_OK) {
        ret->ok = 0;
        snprintf(ret->reason, sizeof ret->reason, "cannot start the verifier");
        goto out;
    }
    while (!w.done) {
        int64_t before = ret->records;
        rc = s->ops->audit_list(s, w.last_seq, 1000, auditlog_row, &w);
        if (rc != STORE_OK) {
            goto out;
        }
        if (ret->records == before) {
            break;
        }
    }
    if (!w.done && ret->records > 0) {
        enum audit_fault fault = audit_verifier_finish(w.v, &p);
        if (fault != AUDIT_FAULT_NONE) {
            ret->ok = 0;
            ret->first_bad_seq = (int64_t)p.seq;
            snprintf(ret->reason, sizeof ret->reason, "%s: %s", audit_fault_name(fault), p.why);
        }
    }
out:
    audit_verifier_free(w.v);
    buf_done(&w.rebuilt);
    return rc;
}
