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

#define AUDITLOG_SEED_LEN 32

static int auditlog_unhex(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = hex[2 * i + (size_t)j];
            unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                : 16u;
            if (d == 16) {
                return -1;
            }
            v = v * 16 + d;
        }
        out[i] = (unsigned char)v;
    }
    return hex[2 * n] == '\0' || hex[2 * n] == '\n' ? 0 : -1;
}

static int auditlog_write_new(const char *path, EVP_PKEY **ret_key, char *err)
{
    unsigned char seed[AUDITLOG_SEED_LEN];
    char hex[2 * AUDITLOG_SEED_LEN + 2];
    size_t n = sizeof seed;
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    int fd = -1;
    int rc = -1;
    if (!ctx || EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_keygen(ctx, &key) != 1 ||
        EVP_PKEY_get_raw_private_key(key, seed, &n) != 1 || n != sizeof seed) {
        snprintf(err, 256, "cannot make an Ed25519 key");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(hex + 2 * i, 3, "%02x", seed[i]);
    }
    hex[2 * n] = '\n';
    hex[2 * n + 1] = '\0';
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, hex, 2 * n + 1) != (ssize_t)(2 * n + 1) || fsync(fd) != 0) {
        snprintf(err, 256, "cannot write %.150s: %s", path, strerror(errno));
        goto out;
    }
    *ret_key = key;
    key = NULL;
    rc = 0;
out:
    if (fd >= 0) {
        close(fd);
    }
    OPENSSL_cleanse(seed, sizeof seed);
    OPENSSL_cleanse(hex, sizeof hex);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(ctx);
    return rc;
}

int auditlog_key_load(const char *data_dir, EVP_PKEY **ret_key, char *err)
{
    char path[4200];
    char hex[2 * AUDITLOG_SEED_LEN + 8] = "";
    unsigned char seed[AUDITLOG_SEED_LEN];
    const char *given = getenv("AIRLOCK_AUDIT_KEY");
    const char *what = "AIRLOCK_AUDIT_KEY";
    int rc = -1;
    snprintf(path, sizeof path, "%s/audit.key", data_dir);
    if (given && given[0]) {
        snprintf(hex, sizeof hex, "%s", given);
    } else {
        FILE *f = fopen(path, "rbe");
        if (!f && errno == ENOENT) {
            return auditlog_write_new(path, ret_key, err);
        }
        if (!f) {
            snprintf(err, 256, "cannot read %.150s: %s", path, strerror(errno));
            return -1;
        }
        size_t got = fread(hex, 1, sizeof hex - 1, f);
        hex[got] = '\0';
        fclose(f);
        what = path;
    }
    if (strlen(hex) < 2 * AUDITLOG_SEED_LEN || auditlog_unhex(hex, seed, sizeof seed) != 0) {
        snprintf(err, 256, "%.150s must hold an Ed25519 private key as 64 hex digits", what);
        goto out;
    }
    *ret_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof seed);
    if (!*ret_key) {
        snprintf(err, 256, "%.150s: not an Ed25519 private key", what);
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(seed, sizeof seed);
    OPENSSL_cleanse(hex, sizeof hex);
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
