/*
 * admin_cmds.c - the operator's commands of airlockd that do not serve (admin_cmds.h):
 *
 *   airlockd keys rotate continuation|audit|secret --data-dir DIR [--database URL] [--prepare]
 *   airlockd backup --data-dir DIR DEST
 *
 * A rotation works on a stopped data directory: it takes the lock a running airlockd holds
 * (keyfile_lock) and refuses when it cannot. A new key is written beside the old one first
 * (NAME.next), then the database changes in one transaction, then the new key replaces the old
 * file: a rotation cut at any point is finished by running it again, which takes up NAME.next
 * and skips what the database already has. Keys given by the environment are never rotated here
 * (the environment's owner holds them).
 *
 * --prepare writes NAME.next alone: running nodes given it (SIGHUP, keys.h) verify, open and sign
 * with it as it comes into use, so the rotation that takes it up next is made while they serve.
 *
 * The backup reads a live data directory: the key files are copied, then SQLite's online backup
 * takes one snapshot of the database while airlockd goes on writing.
 */
#include "admin_cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "auditlog.h"
#include "error.h"
#include "keyfile.h"
#include "keys.h"
#include "secretbox.h"
#include "store.h"

#define ADMIN_PATH_MAX 4200
#define ADMIN_KEY_LEN  32 /* every rotated key: continuation, Ed25519 seed, AES-256 */

static const char admin_usage[] =
        "usage: airlockd keys rotate continuation|audit|secret --data-dir DIR [--database URL]\n"
        "                            [--prepare]\n"
        "       airlockd backup --data-dir DIR DEST\n"
        "  keys rotate: a new key for a data directory no airlockd holds (a stopped node's, or a\n"
        "    copy of its key files); the old continuation key still verifies what it signed, a\n"
        "    new audit key is announced in the log by a checkpoint signed with the old one,\n"
        "    sealed secrets are sealed again under a new secret key in one transaction. Copy the\n"
        "    key files to every node's data directory, then start them or send them SIGHUP.\n"
        "    --prepare: only stage the next key (NAME.next) for running nodes to take first\n"
        "    (SIGHUP); the rotation without --prepare then takes it up (docs/operations.md).\n"
        "  backup: a consistent copy of DIR (the SQLite database, by SQLite's online backup,\n"
        "    and the key files) into the new directory DEST, while airlockd runs. With\n"
        "    PostgreSQL: pg_dump and the key files (docs/operations.md).\n"
        "exit status: 0 done, 1 failed, 2 usage error\n";

/* The values sealed at rest under the secret key: table, its key column, the sealed column and
 * the context it is sealed for, "KIND/KEY/FIELD" (secretbox.h). A table with a sealed column is
 * one more line. */
static const struct admin_sealed {
    const char *table;
    const char *key_column;
    const char *column;
    const char *kind;
    const char *field;
} admin_sealed[] = {
    { "connectors", "name", "signing_secret", "connector", "signing_secret" },
    { "connectors", "name", "headers", "connector", "headers" },
    { "mounts", "name", "secret", "mount", "secret_access_key" },
    { "webhooks", "id", "secret", "webhook", "signing_secret" },
};

struct admin_opts {
    const char *data_dir;
    const char *database;
    const char *what; /* keys rotate WHAT, or backup's DEST */
    int prepare;      /* keys rotate --prepare */
};

/* argv[first..] as --data-dir DIR, --database URL and one word. 0, or 2 (printed why). */
static int admin_args(int argc, char **argv, int first, struct admin_opts *o)
{
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(admin_usage, stdout);
            return 1;
        }
        if (strcmp(argv[i], "--prepare") == 0 && strcmp(argv[1], "keys") == 0) {
            o->prepare = 1;
        } else if (strcmp(argv[i], "--data-dir") == 0 || strcmp(argv[i], "--database") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "airlockd: %s needs a value\n%s", argv[i], admin_usage);
                return 2;
            }
            *(argv[i][7] == 'd' ? &o->data_dir : &o->database) = argv[i + 1];
            i++;
        } else if (argv[i][0] == '-' || o->what) {
            fprintf(stderr, "airlockd: unexpected %s\n%s", argv[i], admin_usage);
            return 2;
        } else {
            o->what = argv[i];
        }
    }
    if (!o->data_dir || !o->what) {
        fprintf(stderr, "airlockd: --data-dir and %s are needed\n%s",
                strcmp(argv[1], "backup") == 0 ? "DEST" : "what to rotate", admin_usage);
        return 2;
    }
    if (strlen(o->data_dir) > ADMIN_PATH_MAX - 64 || strlen(o->what) > ADMIN_PATH_MAX - 64) {
        fprintf(stderr, "airlockd: a path is too long\n");
        return 2;
    }
    return 0;
}

/* The store of the data directory (its airlock.db, which must exist), or of --database. */
static struct store *admin_store_open(const struct admin_opts *o)
{
    char path[ADMIN_PATH_MAX];
    char errmsg[STORE_ERRMSG_MAX];
    struct store *s = NULL;
    snprintf(path, sizeof path, "%s/airlock.db", o->data_dir);
    if (!o->database && access(path, F_OK) != 0) {
        fprintf(stderr, "airlockd: keys: %s: no database there\n", path);
        return NULL;
    }
    if (o->database ? store_postgres_open(o->database, &s, errmsg) != STORE_OK
                    : store_sqlite_open(path, &s, errmsg) != STORE_OK) {
        fprintf(stderr, "airlockd: keys: %s\n", errmsg);
        return NULL;
    }
    return s;
}

/* The new key into ret: NAME.next when it is staged (--prepare) or left by a rotation cut short
 * (*ret_staged 1), else a new one written there first. A NAME.next that is a key of NAME already
 * is a finished rotation's leftover: it goes, and a new key is made. 0, or -1 (printed why). */
static int admin_next_key(const char *data_dir, const char *file, unsigned char *ret,
                          int *ret_staged)
{
    char next[128];
    char path[ADMIN_PATH_MAX + 128];
    struct keyfile_ring ring;
    struct al_error err = { 0 };
    int rc = -1;
    *ret_staged = 0;
    snprintf(next, sizeof next, "%s.next", file);
    snprintf(path, sizeof path, "%s/%s", data_dir, next);
    if (keyfile_load_ring(data_dir, file, NULL, ADMIN_KEY_LEN, &ring, &err) != 0) {
        goto out;
    }
    if (ring.has_next) {
        memcpy(ret, ring.next, ADMIN_KEY_LEN);
        *ret_staged = 1;
        rc = 0;
        goto out;
    }
    if (unlink(path) == 0) {
        fprintf(stderr, "airlockd: keys: %s was a key in use already: removed\n", path);
    }
    if (keyfile_random(ret, ADMIN_KEY_LEN) == 0 &&
        keyfile_write(data_dir, next, ret, ADMIN_KEY_LEN, 1, &err) == 0) {
        rc = 0;
    }
out:
    if (rc != 0) {
        fprintf(stderr, "airlockd: keys: %s\n", err.message[0] ? err.message : "no random bytes");
    }
    OPENSSL_cleanse(&ring, sizeof ring);
    return rc;
}

/* A rotation of the database with no key staged: nodes serving meanwhile cannot open what is
 * sealed under the new secret key, or sign the log's new audit key, until they are given it. */
static void admin_warn_unstaged(const struct admin_opts *o, int staged, const char *name)
{
    if (!staged && o->database) {
        fprintf(stderr,
                "airlockd: keys: no %s key was staged (--prepare): nodes that serve meanwhile "
                "work with it only once they are given the new key file and reloaded; stop "
                "them, or stage the key first (docs/operations.md)\n",
                name);
    }
}

/* The rotation's own key: NAME.next taken up (said), or made. */
static int admin_rotation_key(const struct admin_opts *o, const char *file, unsigned char *ret,
                              int *ret_staged)
{
    if (admin_next_key(o->data_dir, file, ret, ret_staged) != 0) {
        return -1;
    }
    if (*ret_staged) {
        fprintf(stderr,
                "airlockd: keys: taking up %s/%s.next (staged by --prepare, or left by a "
                "rotation cut short)\n",
                o->data_dir, file);
    }
    return 0;
}

/* The new key in place of the old file, and NAME.next gone. 0, or -1 (printed why). */
static int admin_key_replace(const char *data_dir, const char *file, const unsigned char *keys,
                             size_t n)
{
    char path[ADMIN_PATH_MAX + 128];
    struct al_error err = { 0 };
    if (keyfile_write(data_dir, file, keys, ADMIN_KEY_LEN, n, &err) != 0) {
        fprintf(stderr, "airlockd: keys: %s\n", err.message);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s.next", data_dir, file);
    unlink(path);
    return 0;
}

static int admin_rotate_continuation(const struct admin_opts *o)
{
    unsigned char keys[KEYFILE_KEEP_MAX * ADMIN_KEY_LEN];
    struct al_error err = { 0 };
    size_t older = 0;
    int rc = 1;
    /* keys[0] the new key, keys[1] the one in use, then the older ones it still verifies */
    if (keyfile_load(o->data_dir, "continuation.key", NULL, ADMIN_KEY_LEN, keys + ADMIN_KEY_LEN,
                     &err) != 0 ||
        keyfile_load_previous(o->data_dir, "continuation.key", NULL, ADMIN_KEY_LEN,
                              keys + 2 * ADMIN_KEY_LEN, KEYFILE_KEEP_MAX - 2, &older, &err) != 0) {
        fprintf(stderr, "airlockd: keys: continuation key: %s\n", err.message);
        goto out;
    }
    int staged = 0;
    if (admin_rotation_key(o, "continuation.key", keys, &staged) != 0 ||
        admin_key_replace(o->data_dir, "continuation.key", keys, older + 2) != 0) {
        goto out;
    }
    printf("continuation key rotated: new continuations are signed with the new key; %zu older "
           "key%s still verif%s what %s signed\n",
           older + 1, older ? "s" : "", older ? "y" : "ies", older ? "they" : "it");
    rc = 0;
out:
    OPENSSL_cleanse(keys, sizeof keys);
    return rc;
}

/* The rows of one sealed column, copied out before any is written. */
struct admin_rows {
    size_t n;
    size_t cap;
    char **keys;
    char **sealed;
    int oom;
};

static int admin_rows_add(void *userdata, const char *key, const char *sealed)
{
    struct admin_rows *r = userdata;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        char **k = realloc(r->keys, cap * sizeof *k);
        if (k) {
            r->keys = k;
        }
        char **v = k ? realloc(r->sealed, cap * sizeof *v) : NULL;
        if (!v) {
            r->oom = 1;
            return 1;
        }
        r->sealed = v;
        r->cap = cap;
    }
    r->keys[r->n] = strdup(key ? key : "");
    r->sealed[r->n] = strdup(sealed ? sealed : "");
    r->n++;
    r->oom |= !r->keys[r->n - 1] || !r->sealed[r->n - 1];
    return r->oom;
}

static void admin_rows_free(struct admin_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->keys[i]);
        free(r->sealed[i]);
    }
    free(r->keys);
    free(r->sealed);
}

/* One sealed column sealed again under new_key: *ret_done counts the values. A value that
 * opens under the new key already was sealed again by a rotation cut short; the others open
 * under one of the old keys (the one in use, or one it replaced: a node that had not taken the
 * last rotation yet sealed with it). 0, or -1 (printed why). */
static int admin_reseal(struct store *s, const struct admin_sealed *col,
                        struct secretbox_keys *old_keys,
                        const unsigned char new_key[SECRETBOX_KEY_LEN], size_t *ret_done)
{
    struct admin_rows rows = { 0 };
    char context[STORE_NAME_MAX + 64];
    int rc = -1;
    enum store_rc src =
            s->ops->sealed_list(s, col->table, col->key_column, col->column, admin_rows_add, &rows);
    if (src != STORE_OK || rows.oom) {
        fprintf(stderr, "airlockd: keys: %s.%s: %s\n", col->table, col->column,
                rows.oom ? "out of memory" : s->ops->errmsg(s));
        goto out;
    }
    for (size_t i = 0; i < rows.n; i++) {
        char *plain = NULL;
        char *sealed = NULL;
        size_t len = 0;
        snprintf(context, sizeof context, "%s/%s/%s", col->kind, rows.keys[i], col->field);
        if (secretbox_open(new_key, context, rows.sealed[i], &plain, &len) == 0) {
            OPENSSL_cleanse(plain, len);
            free(plain);
            continue;
        }
        if (secretbox_keys_open(old_keys, context, rows.sealed[i], &plain, &len) != 0) {
            fprintf(stderr, "airlockd: keys: %s %s: its %s opens with none of the keys\n",
                    col->table, rows.keys[i], col->column);
            goto out;
        }
        int sealed_ok = secretbox_seal(new_key, context, plain, len, &sealed) == 0;
        OPENSSL_cleanse(plain, len);
        free(plain);
        src = sealed_ok ? s->ops->sealed_set(s, col->table, col->key_column, rows.keys[i],
                                             col->column, sealed)
                        : STORE_ERROR;
        free(sealed);
        if (src != STORE_OK) {
            fprintf(stderr, "airlockd: keys: %s %s: %s\n", col->table, rows.keys[i],
                    sealed_ok ? s->ops->errmsg(s) : "cannot seal");
            goto out;
        }
        (*ret_done)++;
    }
    rc = 0;
out:
    admin_rows_free(&rows);
    return rc;
}

static int admin_rotate_secret(const struct admin_opts *o)
{
    struct keyfile_ring old;
    struct secretbox_keys old_keys;
    /* the new key, then the one in use and the older ones: values sealed under them by a node
     * that takes this rotation late still open */
    unsigned char keys[KEYFILE_KEEP_MAX * SECRETBOX_KEY_LEN];
    unsigned char *new_key = keys;
    struct al_error err = { 0 };
    struct store *s = NULL;
    size_t done = 0;
    int rc = 1;
    if (secretbox_keys_init(&old_keys) != 0) {
        fprintf(stderr, "airlockd: keys: out of memory\n");
        return 1;
    }
    if (secretbox_ring_load(o->data_dir, &old, &err) != 0) {
        fprintf(stderr, "airlockd: keys: secret key: %s\n", err.message);
        goto out;
    }
    old.has_next = 0; /* the new key, taken up below */
    secretbox_keys_set(&old_keys, &old);
    size_t kept = old.n < KEYFILE_KEEP_MAX - 1 ? old.n : KEYFILE_KEEP_MAX - 1;
    memcpy(keys + SECRETBOX_KEY_LEN, old.keys, kept * SECRETBOX_KEY_LEN);
    int staged = 0;
    if (admin_rotation_key(o, "secret.key", new_key, &staged) != 0 || !(s = admin_store_open(o))) {
        goto out;
    }
    admin_warn_unstaged(o, staged, "secret");
    if (s->ops->tx_begin(s) != STORE_OK) {
        fprintf(stderr, "airlockd: keys: %s\n", s->ops->errmsg(s));
        goto out;
    }
    for (size_t i = 0; i < sizeof admin_sealed / sizeof admin_sealed[0]; i++) {
        if (admin_reseal(s, &admin_sealed[i], &old_keys, new_key, &done) != 0) {
            s->ops->tx_rollback(s);
            goto out;
        }
    }
    if (s->ops->tx_commit(s) != STORE_OK) {
        fprintf(stderr, "airlockd: keys: %s\n", s->ops->errmsg(s));
        s->ops->tx_rollback(s);
        goto out;
    }
    if (admin_key_replace(o->data_dir, "secret.key", keys, kept + 1) != 0) {
        goto out;
    }
    printf("secret key rotated: %zu sealed value%s sealed again under the new key\n", done,
           done == 1 ? "" : "s");
    rc = 0;
out:
    if (s) {
        s->ops->close(s);
    }
    OPENSSL_cleanse(&old, sizeof old);
    OPENSSL_cleanse(keys, sizeof keys);
    secretbox_keys_done(&old_keys);
    return rc;
}

/* The log's last record. */
struct admin_last {
    int64_t seq;
    char hash[AUDIT_HASH_HEX_LEN + 1];
};

static int admin_last_fn(void *userdata, const struct store_audit *a)
{
    struct admin_last *l = userdata;
    l->seq = a->seq;
    snprintf(l->hash, sizeof l->hash, "%s", a->hash ? a->hash : "");
    return 1;
}

/* The log's key after each checkpoint, the last one's in the end. */
static int admin_log_key_fn(void *userdata, const struct store_audit *a)
{
    (void)audit_details_log_key(a->details, userdata);
    return 0;
}

/* Appends the announcement of new_pub, signed with old, and a checkpoint of it signed with new:
 * the records before are covered by a checkpoint of the new key from the start. Nothing when the
 * log is at new_pub already (a rotation cut short and run again, records appended since or
 * not); CONFLICT (why says) when the log is at another key than old_pub. */
static enum store_rc admin_announce(struct store *s, EVP_PKEY *old, EVP_PKEY *new_key,
                                    const char *old_pub, const char *new_pub, int64_t *ret_seq,
                                    char why[STORE_ERRMSG_MAX])
{
    static const struct store_audit_filter checkpoints = { AUDIT_CHECKPOINT_ACTION, NULL, NULL };
    struct admin_last last = { 0, "" };
    char log_key[AUDIT_KEY_HEX_LEN + 1] = "";
    char sig[AUDIT_SIG_HEX_LEN + 1];
    struct buf details;
    int64_t head = 0;
    buf_init(&details, 1024);
    enum store_rc rc = s->ops->audit_head(s, &head);
    if (rc == STORE_OK && head > 0) {
        rc = s->ops->audit_list(s, head - 1, 1, admin_last_fn, &last);
    }
    if (rc == STORE_OK && head > 0) {
        rc = s->ops->audit_search(s, 0, head, &checkpoints, admin_log_key_fn, log_key);
    }
    if (rc != STORE_OK || head == 0 || strcmp(log_key, new_pub) == 0) {
        goto out; /* nothing signed yet, or announced by a rotation cut short */
    }
    if (log_key[0] && strcmp(log_key, old_pub) != 0) {
        /* announcing from a key the log has left would break its chain of keys */
        snprintf(why, STORE_ERRMSG_MAX,
                 "the log is signed with the key %s, not with this directory's audit.key (%s): "
                 "rotate from the key files of a node that holds the log's key",
                 log_key, old_pub);
        rc = STORE_CONFLICT;
        goto out;
    }
    for (int step = 0; step < 2 && rc == STORE_OK; step++) {
        buf_reset(&details);
        int ok = step == 0 ? audit_announce_sign(old, (uint64_t)last.seq, last.hash, new_pub, sig,
                                                 NULL) == AL_OK &&
                                     audit_announce_details(&details, (uint64_t)last.seq, last.hash,
                                                            old_pub, sig, new_pub) == BUF_OK
                           : audit_checkpoint_sign(new_key, (uint64_t)last.seq, last.hash, sig,
                                                   NULL) == AL_OK &&
                                     audit_checkpoint_details(&details, (uint64_t)last.seq,
                                                              last.hash, new_pub, sig) == BUF_OK;
        int64_t seq = 0;
        rc = ok ? s->ops->audit_append(s, AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION, "audit",
                                       NULL, details.data, &seq)
                : STORE_ERROR;
        if (rc == STORE_OK) {
            rc = s->ops->audit_list(s, seq - 1, 1, admin_last_fn, &last);
        }
    }
    *ret_seq = last.seq;
out:
    buf_done(&details);
    return rc;
}

static int admin_rotate_audit(const struct admin_opts *o)
{
    unsigned char seed[ADMIN_KEY_LEN];
    char old_pub[AUDIT_KEY_HEX_LEN + 1];
    char new_pub[AUDIT_KEY_HEX_LEN + 1];
    struct al_error err = { 0 };
    EVP_PKEY *old = NULL;
    EVP_PKEY *new_key = NULL;
    struct store *s = NULL;
    int64_t seq = 0;
    int rc = 1;
    if (auditlog_key_load(o->data_dir, &old, &err) != 0) {
        fprintf(stderr, "airlockd: keys: audit key: %s\n", err.message);
        goto out;
    }
    int staged = 0;
    if (admin_rotation_key(o, "audit.key", seed, &staged) != 0) {
        goto out;
    }
    admin_warn_unstaged(o, staged, "audit");
    new_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof seed);
    if (!new_key || audit_public_key_hex(old, old_pub, NULL) != AL_OK ||
        audit_public_key_hex(new_key, new_pub, NULL) != AL_OK) {
        fprintf(stderr, "airlockd: keys: no Ed25519 key\n");
        goto out;
    }
    if (!(s = admin_store_open(o))) {
        goto out;
    }
    char why[STORE_ERRMSG_MAX] = "";
    enum store_rc src = s->ops->tx_begin(s);
    if (src == STORE_OK) {
        src = admin_announce(s, old, new_key, old_pub, new_pub, &seq, why);
    }
    if (src == STORE_OK) {
        src = s->ops->tx_commit(s);
    }
    if (src != STORE_OK) {
        fprintf(stderr, "airlockd: keys: audit: %s\n", why[0] ? why : s->ops->errmsg(s));
        s->ops->tx_rollback(s);
        goto out;
    }
    if (admin_key_replace(o->data_dir, "audit.key", seed, 1) != 0) {
        goto out;
    }
    printf("audit key rotated: public key %s\n", new_pub);
    if (seq > 0) {
        printf("announced in the log by a checkpoint signed with %s; the log is signed through "
               "seq %lld by the new key\n",
               old_pub, (long long)seq);
    }
    rc = 0;
out:
    if (s) {
        s->ops->close(s);
    }
    EVP_PKEY_free(old);
    EVP_PKEY_free(new_key);
    OPENSSL_cleanse(seed, sizeof seed);
    return rc;
}

/* --prepare: NAME.next made (or kept when it is there) and named, nothing else changed. */
static int admin_prepare(const struct admin_opts *o, const char *name)
{
    char file[64];
    char id[AUDIT_KEY_HEX_LEN + 1];
    unsigned char key[ADMIN_KEY_LEN];
    snprintf(file, sizeof file, "%s.key", name);
    int staged = 0;
    if (admin_next_key(o->data_dir, file, key, &staged) != 0) {
        return 1;
    }
    EVP_PKEY *pkey = strcmp(name, "audit") == 0
                             ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, key, sizeof key)
                             : NULL;
    if (pkey ? audit_public_key_hex(pkey, id, NULL) != AL_OK : (keys_id(key, sizeof key, id), 0)) {
        fprintf(stderr, "airlockd: keys: no Ed25519 key\n");
        EVP_PKEY_free(pkey);
        OPENSSL_cleanse(key, sizeof key);
        return 1;
    }
    EVP_PKEY_free(pkey);
    OPENSSL_cleanse(key, sizeof key);
    printf("%s key %sstaged in %s/%s.next (%s %s): copy it into every node's data directory and "
           "send them SIGHUP, then run this command again without --prepare\n",
           name, staged ? "already " : "", o->data_dir, file,
           strcmp(name, "audit") == 0 ? "public key" : "key", id);
    return 0;
}

static int admin_keys(int argc, char **argv)
{
    static const char *const env[] = { "AIRLOCK_CONTINUATION_KEY", "AIRLOCK_AUDIT_KEY",
                                       "AIRLOCK_SECRET_KEY" };
    static const char *const names[] = { "continuation", "audit", "secret" };
    struct admin_opts o = { 0 };
    struct al_error err = { 0 };
    int lock_fd = -1;
    if (argc < 3 || strcmp(argv[2], "rotate") != 0) {
        fputs(admin_usage, argc > 2 && strcmp(argv[2], "--help") == 0 ? stdout : stderr);
        return argc > 2 && strcmp(argv[2], "--help") == 0 ? 0 : 2;
    }
    int rc = admin_args(argc, argv, 3, &o);
    if (rc != 0) {
        return rc == 1 ? 0 : 2;
    }
    size_t which = 0;
    while (which < 3 && strcmp(o.what, names[which]) != 0) {
        which++;
    }
    if (which == 3) {
        fprintf(stderr, "airlockd: keys rotate %s: continuation, audit or secret\n%s", o.what,
                admin_usage);
        return 2;
    }
    if (getenv(env[which]) && getenv(env[which])[0]) {
        fprintf(stderr,
                "airlockd: keys: %s gives the %s key: rotate it where it is kept (a key given "
                "by the environment is not in the data directory)\n",
                env[which], names[which]);
        return 2;
    }
    int locked = keyfile_lock(o.data_dir, &lock_fd, &err);
    if (locked != 0) {
        fprintf(stderr,
                locked > 0 ? "airlockd: keys: %s is in use by a running airlockd: stop it "
                             "first (with PostgreSQL, or for the continuation key, rotate a "
                             "copy of its key files instead and send it SIGHUP: "
                             "docs/operations.md)\n"
                           : "airlockd: keys: %s: %s\n",
                o.data_dir, err.message);
        return 1;
    }
    rc = o.prepare    ? admin_prepare(&o, names[which])
         : which == 0 ? admin_rotate_continuation(&o)
         : which == 1 ? admin_rotate_audit(&o)
                      : admin_rotate_secret(&o);
    close(lock_fd);
    return rc;
}

/* DIR/name copied to DEST/name (0600, synced) when it exists. 0, or -1 (printed why). */
static int admin_copy_file(const char *dir, const char *dest, const char *name, int *ret_copied)
{
    char from[ADMIN_PATH_MAX + 64];
    char to[ADMIN_PATH_MAX + 64];
    char chunk[4096];
    int rc = -1;
    *ret_copied = 0;
    snprintf(from, sizeof from, "%s/%s", dir, name);
    snprintf(to, sizeof to, "%s/%s", dest, name);
    int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0) {
        if (errno == ENOENT) {
            return 0;
        }
        fprintf(stderr, "airlockd: backup: cannot read %s: %s\n", from, strerror(errno));
        return -1;
    }
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0) {
        fprintf(stderr, "airlockd: backup: cannot create %s: %s\n", to, strerror(errno));
        close(in);
        return -1;
    }
    ssize_t n;
    int ok = 1;
    while (ok && (n = read(in, chunk, sizeof chunk)) > 0) {
        ok = write(out, chunk, (size_t)n) == n;
    }
    ok = ok && n == 0 && fsync(out) == 0;
    ok &= close(out) == 0;
    close(in);
    OPENSSL_cleanse(chunk, sizeof chunk);
    if (!ok) {
        fprintf(stderr, "airlockd: backup: cannot copy %s: %s\n", from, strerror(errno));
        goto out;
    }
    *ret_copied = 1;
    rc = 0;
out:
    return rc;
}

static int admin_backup(int argc, char **argv)
{
    /* audit.head before the database: the copy of the log then reaches the kept checkpoint */
    static const char *const files[] = { "audit.head",       "admin.key",
                                         "audit.key",        "secret.key",
                                         "continuation.key", "audit.key.next",
                                         "secret.key.next",  "continuation.key.next" };
    struct admin_opts o = { 0 };
    char src[ADMIN_PATH_MAX];
    char dest[ADMIN_PATH_MAX];
    char errmsg[STORE_ERRMSG_MAX];
    int rc = admin_args(argc, argv, 2, &o);
    if (rc != 0) {
        return rc == 1 ? 0 : 2;
    }
    if (o.database) {
        fprintf(stderr, "airlockd: backup: the store is in PostgreSQL: back it up with pg_dump, "
                        "and copy the key files of the data directory (docs/operations.md)\n");
        return 2;
    }
    snprintf(src, sizeof src, "%s/airlock.db", o.data_dir);
    if (access(src, F_OK) != 0) {
        fprintf(stderr, "airlockd: backup: %s: no database there\n", src);
        return 1;
    }
    if (mkdir(o.what, 0700) != 0) {
        fprintf(stderr, "airlockd: backup: cannot create %s: %s (DEST must be a new directory)\n",
                o.what, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int copied = 0;
        if (admin_copy_file(o.data_dir, o.what, files[i], &copied) != 0) {
            return 1;
        }
        if (copied) {
            printf("%s/%s\n", o.what, files[i]);
        }
    }
    snprintf(dest, sizeof dest, "%s/airlock.db", o.what);
    if (store_sqlite_backup(src, dest, errmsg) != STORE_OK) {
        fprintf(stderr, "airlockd: backup: %s\n", errmsg);
        return 1;
    }
    int dfd = open(o.what, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        fprintf(stderr, "airlockd: backup: cannot sync %s: %s\n", o.what, strerror(errno));
        if (dfd >= 0) {
            close(dfd);
        }
        return 1;
    }
    close(dfd);
    printf("%s (a consistent copy of %s)\n", dest, src);
    static const char *const env[] = { "AIRLOCK_CONTINUATION_KEY", "AIRLOCK_AUDIT_KEY",
                                       "AIRLOCK_SECRET_KEY" };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        if (getenv(env[i]) && getenv(env[i])[0]) {
            fprintf(stderr, "airlockd: backup: %s is set: that key is not in the backup\n", env[i]);
        }
    }
    return 0;
}

int admin_cmds_run(int argc, char **argv)
{
    if (argc < 2) {
        return -1;
    }
    umask(077); /* a copy of the database and every key file is airlockd's alone */
    if (strcmp(argv[1], "keys") == 0) {
        return admin_keys(argc, argv);
    }
    if (strcmp(argv[1], "backup") == 0) {
        return admin_backup(argc, argv);
    }
    return -1;
}
