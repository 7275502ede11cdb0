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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "error.h"
#include "json.h"
#include "keyfile.h"
#include "witness.h"

#define AUDITLOG_PATH_MAX 4200
#define AUDITLOG_HEAD_MAX 4096 /* bytes of audit.head read */

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
    /* this server's key may be one announced since the log began (airlockd keys rotate) */
    if (audit_verifier_new(public_key_hex, AUDIT_ALLOW_UNSEALED | AUDIT_PIN_IN_CHAIN, &c->v,
                           NULL) != AL_OK ||
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

enum buf_status auditlog_checkpoint_json(const struct store_checkpoint *cp, struct buf *b)
{
    return buf_printf(b,
                      "{\"seq\":%" PRId64 ",\"hash\":\"%s\",\"time\":\"%s\",\"public_key\":\"%s\","
                      "\"signature\":\"%s\"}\n",
                      cp->seq, cp->hash, cp->time, cp->public_key, cp->signature);
}

struct auditlog_kept {
    pthread_mutex_t lock;      /* cp and have: short holds only */
    pthread_mutex_t file_lock; /* one writer of audit.head at a time, held across its fsync */
    struct store_checkpoint cp;
    int have;
    struct witness *witness;
    char dir[AUDITLOG_PATH_MAX];
};

/* A string member of exactly len characters (len 0: up to cap - 1) into out. */
static int auditlog_member(const struct json_node *root, const char *name, size_t len, char *out,
                           size_t cap)
{
    const struct json_node *n = json_get(root, name);
    if (!n || n->type != JSON_STRING || n->str_len >= cap || (len && n->str_len != len)) {
        return -1;
    }
    memcpy(out, n->str, n->str_len + 1);
    return 0;
}

/* audit.head's text as a checkpoint whose signature verifies under its own key (a key changed
 * since does not make the records it signed any less the log's). */
static int auditlog_head_parse(const char *text, size_t len, struct store_checkpoint *cp)
{
    struct json_doc *doc = NULL;
    int valid = 0;
    int rc = -1;
    if (json_parse(text, len, 4, &doc, NULL) != AL_OK || json_root(doc)->type != JSON_OBJECT) {
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *seq = json_get(root, "seq");
    if (!seq || seq->type != JSON_NUMBER || seq->num < 1 || seq->num > (double)AUDIT_MAX_SEQ ||
        seq->num != (double)(int64_t)seq->num ||
        auditlog_member(root, "hash", AUDIT_HASH_HEX_LEN, cp->hash, sizeof cp->hash) != 0 ||
        auditlog_member(root, "time", 0, cp->time, sizeof cp->time) != 0 ||
        auditlog_member(root, "public_key", AUDIT_KEY_HEX_LEN, cp->public_key,
                        sizeof cp->public_key) != 0 ||
        auditlog_member(root, "signature", AUDIT_SIG_HEX_LEN, cp->signature,
                        sizeof cp->signature) != 0) {
        goto out;
    }
    cp->seq = (int64_t)seq->num;
    if (audit_checkpoint_verify(cp->public_key, (uint64_t)cp->seq, cp->hash, cp->signature, &valid,
                                NULL) == AL_OK &&
        valid) {
        rc = 0;
    }
out:
    json_doc_free(doc);
    return rc;
}

int auditlog_kept_open(const char *data_dir, struct witness *witness, struct auditlog_kept **ret)
{
    char path[AUDITLOG_PATH_MAX + 16];
    struct buf text;
    char chunk[512];
    struct auditlog_kept *k = calloc(1, sizeof *k);
    if (!k) {
        return -1;
    }
    pthread_mutex_init(&k->lock, NULL);
    pthread_mutex_init(&k->file_lock, NULL);
    k->witness = witness;
    snprintf(k->dir, sizeof k->dir, "%s", data_dir);
    snprintf(path, sizeof path, "%s/audit.head", data_dir);
    buf_init(&text, AUDITLOG_HEAD_MAX);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT) {
        fprintf(stderr, "airlockd: audit: cannot read %s: %s\n", path, strerror(errno));
    }
    ssize_t n = 0;
    int over = 0;
    while (fd >= 0 && (n = read(fd, chunk, sizeof chunk)) > 0) {
        over |= buf_append(&text, chunk, (size_t)n) != BUF_OK;
    }
    if (fd >= 0) {
        close(fd);
        if (n < 0 || over || auditlog_head_parse(text.data ? text.data : "", text.len, &k->cp)) {
            fprintf(stderr,
                    "airlockd: audit: %s is not a signed checkpoint: set aside (the next "
                    "checkpoint replaces it)\n",
                    path);
        } else {
            k->have = 1;
        }
    }
    buf_done(&text);
    *ret = k;
    return 0;
}

void auditlog_kept_free(struct auditlog_kept *k)
{
    if (k) {
        pthread_mutex_destroy(&k->lock);
        pthread_mutex_destroy(&k->file_lock);
        free(k);
    }
}

struct auditlog_at {
    int64_t seq;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int found;
};

static int auditlog_at_row(void *userdata, const struct store_audit *a)
{
    struct auditlog_at *at = userdata;
    if (a->seq == at->seq && a->hash) {
        snprintf(at->hash, sizeof at->hash, "%s", a->hash);
        at->found = 1;
    }
    return 1;
}

enum store_rc auditlog_kept_check(struct auditlog_kept *k, struct store *s,
                                  struct auditlog_result *ret)
{
    struct store_checkpoint cp;
    struct auditlog_at at;
    struct audit_problem p;
    int64_t last = 0;
    int have = 0;
    memset(ret, 0, sizeof *ret);
    ret->ok = 1;
    if (k) {
        pthread_mutex_lock(&k->lock);
        cp = k->cp;
        have = k->have;
        pthread_mutex_unlock(&k->lock);
    }
    if (!have) {
        return STORE_OK;
    }
    memset(&at, 0, sizeof at);
    at.seq = cp.seq;
    enum store_rc rc = s->ops->audit_head(s, &last);
    if (rc == STORE_OK && last >= cp.seq) {
        rc = s->ops->audit_list(s, cp.seq - 1, 1, auditlog_at_row, &at);
    }
    if (rc == STORE_OK && audit_kept_compare((uint64_t)cp.seq, cp.hash, (uint64_t)last,
                                             at.found ? at.hash : NULL, &p) != AUDIT_FAULT_NONE) {
        ret->ok = 0;
        ret->first_bad_seq = (int64_t)p.seq;
        snprintf(ret->reason, sizeof ret->reason, "truncated: %s", p.why);
    }
    return rc;
}

/* audit.head replaced by text: whole or not at all, and on the disk when it returns. */
static int auditlog_head_write(const char *dir, const struct buf *text)
{
    char path[AUDITLOG_PATH_MAX + 16];
    char tmp[AUDITLOG_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/audit.head", dir);
    snprintf(tmp, sizeof tmp, "%s/audit.head.tmp", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return -1;
    }
    int ok = write(fd, text->data, text->len) == (ssize_t)text->len && fsync(fd) == 0;
    ok &= close(fd) == 0;
    ok = ok && rename(tmp, path) == 0;
    int dfd = ok ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    ok = ok && dfd >= 0 && fsync(dfd) == 0; /* the rename itself survives a crash */
    if (dfd >= 0) {
        close(dfd);
    }
    if (!ok) {
        unlink(tmp);
    }
    return ok ? 0 : -1;
}

void auditlog_kept_keep(struct auditlog_kept *k, struct store *s, const struct store_checkpoint *cp)
{
    struct auditlog_result res;
    struct buf text;
    if (!k) {
        return;
    }
    buf_init(&text, 1024);
    pthread_mutex_lock(&k->file_lock);
    pthread_mutex_lock(&k->lock);
    int newer = !k->have || cp->seq > k->cp.seq;
    pthread_mutex_unlock(&k->lock);
    if (!newer) {
        goto out;
    }
    /* never past a cut: the checkpoint it lost stays kept as the evidence */
    if (auditlog_kept_check(k, s, &res) != STORE_OK || !res.ok) {
        goto out;
    }
    if (auditlog_checkpoint_json(cp, &text) != BUF_OK || auditlog_head_write(k->dir, &text) != 0) {
        fprintf(stderr, "airlockd: audit: cannot write %s/audit.head: %s\n", k->dir,
                strerror(errno));
        goto out;
    }
    pthread_mutex_lock(&k->lock);
    k->cp = *cp;
    k->have = 1;
    pthread_mutex_unlock(&k->lock);
    witness_send(k->witness, cp->seq, text.data, text.len);
out:
    pthread_mutex_unlock(&k->file_lock);
    buf_done(&text);
}
