/*
 * sql.c - the operations of store.h that read the same in SQLite's and PostgreSQL's SQL, once for
 * both backends (sql.h): each is its statement, its arguments as text and what its answer means
 * (no row: NOT_FOUND; no row changed: NOT_FOUND, or CONFLICT when the row is there in another
 * state; no row inserted: CONFLICT), run through the backend's exec and walk. An insert says ON
 * CONFLICT DO NOTHING in both dialects, so that a taken key is a row not inserted rather than an
 * error, which on PostgreSQL would abort the caller's whole transaction. Rows become store.h's
 * structs here, borrowed from the backend's result for the callback. This file never logs and
 * knows no backend: errors are the backend's (errmsg), or said here with its name.
 */
#include "sql.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SQL_LINE_MAX ((size_t)1 << 20) /* an audit record's line */
#define SQL_RUN_COLUMNS                                                                            \
    "seq, id, COALESCE(template, ''), COALESCE(version, 0), department, principal, status, "       \
    "input, source, language, functions, outcome, created, updated, seed, COALESCE(clock_ms, 0), " \
    "recovered, forked_from, COALESCE(at_call, 0)"

static struct sql_store *sql_of(struct store *s)
{
    return (struct sql_store *)s;
}

void sql_now(char out[32])
{
    struct timespec ts;
    struct tm tm;
    char date[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%.20s.%03dZ", date, (int)(ts.tv_nsec / 1000000));
}

static const char *col(const struct sql_row *r, int i)
{
    return r->text(r, i);
}

static int64_t num(const struct sql_row *r, int i)
{
    return r->int64(r, i);
}

/* An INSERT ... ON CONFLICT DO NOTHING: a row not inserted is a CONFLICT. */
static enum store_rc sql_insert(struct sql_store *q, const char *sql, int n,
                                const char *const *args)
{
    int64_t changes = 0;
    enum store_rc rc = q->db->exec(q, sql, n, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_CONFLICT : rc;
}

/* An UPDATE or DELETE of one named row: no row changed is NOT_FOUND. */
static enum store_rc sql_change(struct sql_store *q, const char *sql, int n,
                                const char *const *args)
{
    int64_t changes = 0;
    enum store_rc rc = q->db->exec(q, sql, n, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static int sql_stop(const struct sql_row *row, void *fn, void *userdata)
{
    (void)row;
    (void)fn;
    (void)userdata;
    return 1;
}

/* STORE_OK when sql (n arguments) finds a row, NOT_FOUND when not. */
static enum store_rc sql_exists(struct sql_store *q, const char *sql, int n,
                                const char *const *args)
{
    return q->db->walk(q, sql, n, args, 1, sql_stop, NULL, NULL);
}

enum store_rc sql_principal_exists(struct sql_store *q, const char *name)
{
    return sql_exists(q, "SELECT 1 FROM principals WHERE name = $1", 1, &name);
}

/* After an UPDATE of the row `exists` names by arg: OK when it changed, CONFLICT when the row is
 * there (in another state), NOT_FOUND when not. */
static enum store_rc sql_changed_or(struct sql_store *q, enum store_rc rc, int64_t changes,
                                    const char *exists, const char *arg)
{
    if (rc != STORE_OK || changes > 0) {
        return rc;
    }
    rc = sql_exists(q, exists, 1, &arg);
    return rc == STORE_OK ? STORE_CONFLICT : rc;
}

static int sql_int_each(const struct sql_row *row, void *fn, void *userdata)
{
    (void)fn;
    *(int64_t *)userdata = num(row, 0);
    return 1;
}

enum store_rc sql_int(struct sql_store *q, const char *sql, int64_t *ret_value)
{
    int64_t value = 0;
    enum store_rc rc = q->db->walk(q, sql, 0, NULL, 1, sql_int_each, NULL, &value);
    if (rc == STORE_OK) {
        *ret_value = value;
    }
    return rc;
}

/* A walk in seq order (the first column) of sql, whose $1 is the seq to start after, $2 the most
 * rows and $3..$5 the filter's, through at most limit rows, page of them per query (0: all in
 * one). */
struct sql_pager {
    sql_each_fn *each;
    void *fn;
    void *userdata;
    int64_t seq;
    int64_t rows; /* of the current page */
    int stopped;
};

static int sql_pager_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_pager *p = userdata;
    (void)fn;
    p->seq = num(r, 0);
    p->rows++;
    p->stopped = p->each(r, p->fn, p->userdata) != 0;
    return p->stopped;
}

static enum store_rc sql_walk_pages(struct sql_store *q, const char *sql, const char *const *filter,
                                    int64_t after, int64_t limit, int64_t page, sql_each_fn *each,
                                    void *fn, void *userdata)
{
    struct sql_pager p = { each, fn, userdata, after, 0, 0 };
    char from[24];
    char most[24];
    const char *args[] = { from, most, filter[0], filter[1], filter[2] };
    for (int64_t done = 0; done < limit && !p.stopped; done += p.rows) {
        int64_t want = page > 0 && limit - done > page ? page : limit - done;
        snprintf(from, sizeof from, "%" PRId64, p.seq);
        snprintf(most, sizeof most, "%" PRId64, want);
        p.rows = 0;
        enum store_rc rc = q->db->walk(q, sql, 5, args, 0, sql_pager_each, NULL, &p);
        if (rc != STORE_OK) {
            return rc;
        }
        if (p.rows < want) {
            break;
        }
    }
    return STORE_OK;
}

/* db->walk and db->exec of an operation's store. */
static enum store_rc sql_walk(struct store *s, const char *sql, int n, const char *const *args,
                              int one, sql_each_fn *each, void *fn, void *userdata)
{
    return sql_of(s)->db->walk(sql_of(s), sql, n, args, one, each, fn, userdata);
}

static enum store_rc sql_exec(struct store *s, const char *sql, int n, const char *const *args)
{
    return sql_of(s)->db->exec(sql_of(s), sql, n, args, NULL);
}

const char *sql_errmsg(struct store *s)
{
    return sql_of(s)->errmsg;
}

enum store_rc sql_ping(struct store *s)
{
    /* Reads a table, not just the connection: a database file gone bad answers an error, and
     * PostgreSQL resets a broken connection here first, so /readyz both reports an outage and
     * ends it once the database answers again. */
    int64_t n = 0;
    return sql_principal_count(s, &n);
}

/* ---------------------------------------------------------------- principals, keys, roles */

enum store_rc sql_principal_count(struct store *s, int64_t *ret_count)
{
    return sql_int(sql_of(s), "SELECT count(*) FROM principals", ret_count);
}

enum store_rc sql_principal_create(struct store *s, const char *name, const char *kind)
{
    char now[32];
    sql_now(now);
    const char *args[] = { name, kind, now };
    return sql_insert(sql_of(s),
                      "INSERT INTO principals(name, kind, created) VALUES ($1, $2, $3) "
                      "ON CONFLICT DO NOTHING",
                      3, args);
}

#define SQL_PRINCIPAL_SELECT "SELECT name, kind, created, identity, disabled FROM principals "

static int sql_principal_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_principal p = { col(r, 0), col(r, 1), col(r, 2), col(r, 3), num(r, 4) != 0 };
    return ((store_principal_fn *)fn)(userdata, &p);
}

enum store_rc sql_principal_get(struct store *s, const char *name, store_principal_fn *fn,
                                void *userdata)
{
    return sql_walk(s, SQL_PRINCIPAL_SELECT "WHERE name = $1", 1, &name, 1, sql_principal_each,
                    (void *)fn, userdata);
}

enum store_rc sql_principal_list(struct store *s, store_principal_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_PRINCIPAL_SELECT "ORDER BY name", 0, NULL, 0, sql_principal_each,
                    (void *)fn, userdata);
}

enum store_rc sql_key_revoke(struct store *s, const char *principal, const char *prefix)
{
    char now[32];
    sql_now(now);
    const char *args[] = { now, prefix, principal };
    return sql_change(sql_of(s),
                      "UPDATE api_keys SET revoked = $1 WHERE prefix = $2 AND principal = $3 "
                      "AND revoked IS NULL",
                      3, args);
}

static int sql_hex_nibble(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

struct sql_key {
    char principal[STORE_NAME_MAX + 1];
    unsigned char hash[STORE_HASH_LEN];
    int found;
};

static int sql_key_found(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_key *k = userdata;
    const char *name = col(r, 0);
    const char *hex = col(r, 1);
    int ok = name && hex && strlen(name) <= STORE_NAME_MAX && strlen(hex) == 2 * STORE_HASH_LEN;
    (void)fn;
    for (size_t i = 0; ok && i < STORE_HASH_LEN; i++) {
        int hi = sql_hex_nibble(hex[2 * i]);
        int lo = sql_hex_nibble(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        k->hash[i] = (unsigned char)(hi << 4 | lo);
    }
    if (ok) {
        memcpy(k->principal, name, strlen(name) + 1);
        k->found = 1;
    }
    return 1;
}

enum store_rc sql_key_lookup(struct store *s, const char *prefix, char *ret_principal,
                             unsigned char ret_hash[STORE_HASH_LEN])
{
    struct sql_key k = { .found = 0 };
    enum store_rc rc =
            sql_walk(s, sql_of(s)->db->key_lookup, 1, &prefix, 1, sql_key_found, NULL, &k);
    if (rc == STORE_OK && !k.found) {
        return STORE_NOT_FOUND;
    }
    if (rc == STORE_OK) {
        memcpy(ret_principal, k.principal, strlen(k.principal) + 1);
        memcpy(ret_hash, k.hash, STORE_HASH_LEN);
    }
    return rc;
}

static int sql_key_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_key k = { col(r, 0), col(r, 1), col(r, 2) };
    return ((store_key_fn *)fn)(userdata, &k);
}

enum store_rc sql_key_list(struct store *s, const char *principal, store_key_fn *fn, void *userdata)
{
    return sql_walk(
            s,
            "SELECT prefix, created, revoked FROM api_keys WHERE principal = $1 ORDER BY created",
            1, &principal, 0, sql_key_each, (void *)fn, userdata);
}

enum store_rc sql_role_grant(struct store *s, const char *principal, const char *role,
                             const char *department)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc = sql_principal_exists(q, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sql_now(now);
    const char *args[] = { principal, role, department, now };
    return sql_insert(q,
                      "INSERT INTO role_grants(principal, role, department, created) VALUES ($1, "
                      "$2, $3, $4) ON CONFLICT DO NOTHING",
                      4, args);
}

enum store_rc sql_role_revoke(struct store *s, const char *principal, const char *role,
                              const char *department)
{
    const char *args[] = { principal, role, department };
    return sql_change(
            sql_of(s),
            "DELETE FROM role_grants WHERE principal = $1 AND role = $2 AND department = $3", 3,
            args);
}

static int sql_grant_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_grant g = { col(r, 0), col(r, 1) };
    return ((store_grant_fn *)fn)(userdata, &g);
}

enum store_rc sql_role_list(struct store *s, const char *principal, store_grant_fn *fn,
                            void *userdata)
{
    return sql_walk(s,
                    "SELECT role, department FROM role_grants WHERE principal = $1 "
                    "ORDER BY department, role",
                    1, &principal, 0, sql_grant_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- departments */

enum store_rc sql_department_create(struct store *s, const char *name)
{
    char now[32];
    sql_now(now);
    const char *args[] = { name, now };
    return sql_insert(sql_of(s),
                      "INSERT INTO departments(name, created) VALUES ($1, $2) "
                      "ON CONFLICT DO NOTHING",
                      2, args);
}

static int sql_department_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_department d = { col(r, 0), col(r, 1), (int)num(r, 2), col(r, 3), num(r, 4) };
    return ((store_department_fn *)fn)(userdata, &d);
}

enum store_rc sql_department_get(struct store *s, const char *name, store_department_fn *fn,
                                 void *userdata)
{
    return sql_walk(s,
                    "SELECT name, autonomy, allow_adhoc, created, approval_ttl_ms FROM departments "
                    "WHERE name = $1",
                    1, &name, 1, sql_department_each, (void *)fn, userdata);
}

enum store_rc sql_department_list(struct store *s, store_department_fn *fn, void *userdata)
{
    return sql_walk(s,
                    "SELECT name, autonomy, allow_adhoc, created, approval_ttl_ms FROM departments "
                    "ORDER BY name",
                    0, NULL, 0, sql_department_each, (void *)fn, userdata);
}

enum store_rc sql_department_set_policy(struct store *s, const char *name, const char *autonomy,
                                        int allow_adhoc)
{
    const char *args[] = { autonomy, allow_adhoc ? "1" : "0", name };
    return sql_change(sql_of(s),
                      "UPDATE departments SET autonomy = $1, allow_adhoc = $2 WHERE name = $3", 3,
                      args);
}

enum store_rc sql_department_set_approval_ttl(struct store *s, const char *name,
                                              int64_t approval_ttl_ms)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRId64, approval_ttl_ms);
    const char *args[] = { ttl, name };
    return sql_change(sql_of(s),
                      "UPDATE departments SET approval_ttl_ms = CAST($1 AS BIGINT) WHERE name = $2",
                      2, args);
}

/* ---------------------------------------------------------------- audit */

static int sql_audit_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_audit a = { num(r, 0), col(r, 1), col(r, 2), col(r, 3), col(r, 4),
                             col(r, 5), col(r, 6), col(r, 7), col(r, 8), col(r, 9) };
    return ((store_audit_fn *)fn)(userdata, &a);
}

struct sql_head {
    int64_t seq;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int checkpoint;
};

static int sql_head_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_head *h = userdata;
    const char *hash = col(r, 1);
    const char *action = col(r, 2);
    const char *details = col(r, 3);
    (void)fn;
    h->seq = num(r, 0);
    snprintf(h->hash, sizeof h->hash, "%s", hash ? hash : "");
    if (action && details && strcmp(action, AUDIT_CHECKPOINT_ACTION) == 0) {
        /* details written by audit_checkpoint_details: {"hash":..,"public_key":..,"seq":N */
        char want[48];
        snprintf(want, sizeof want, "\"seq\":%" PRId64 ",", h->seq - 1);
        h->checkpoint = strstr(details, want) != NULL;
    }
    return 1;
}

enum store_rc sql_audit_last(struct sql_store *q, int64_t *ret_seq,
                             char ret_hash[AUDIT_HASH_HEX_LEN + 1], int *ret_checkpoint)
{
    struct sql_head h = { .seq = 0, .checkpoint = 0 };
    memset(h.hash, '0', AUDIT_HASH_HEX_LEN);
    enum store_rc rc =
            q->db->walk(q, "SELECT seq, hash, action, details FROM audit ORDER BY seq DESC LIMIT 1",
                        0, NULL, 0, sql_head_each, NULL, &h);
    if (rc == STORE_OK) {
        *ret_seq = h.seq;
        memcpy(ret_hash, h.hash, sizeof h.hash);
        if (ret_checkpoint) {
            *ret_checkpoint = h.checkpoint;
        }
    }
    return rc;
}

enum store_rc sql_audit_write(struct sql_store *q, int64_t seq, const char *prev, const char *actor,
                              const char *action, const char *subject, const char *department,
                              const char *details_json, char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    char now[32];
    char number[24];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    struct buf line;
    struct al_error err;
    enum store_rc rc;
    buf_init(&line, SQL_LINE_MAX);
    memset(&err, 0, sizeof err);
    sql_now(now);
    struct audit_record rec = { (uint64_t)seq,          now,        actor,        action,
                                subject ? subject : "", department, details_json, prev };
    if (audit_record_write(&rec, &line, hash, &err) != AL_OK || buf_append_byte(&line, 0)) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit record: %.200s",
                 err.message[0] ? err.message : "too large");
        rc = STORE_ERROR;
        goto out;
    }
    snprintf(number, sizeof number, "%" PRId64, seq);
    const char *args[] = { number,     now,          actor, action, subject,
                           department, details_json, prev,  hash,   line.data };
    rc = q->db->exec(q,
                     "INSERT INTO audit(seq, time, actor, action, subject, department, details, "
                     "prev, hash, line) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                     10, args, NULL);
    if (rc == STORE_OK) {
        memcpy(ret_hash, hash, sizeof hash);
    }
out:
    buf_done(&line);
    return rc;
}

struct sql_audit_keys *sql_audit_keys_new(void)
{
    struct sql_audit_keys *k = calloc(1, sizeof *k);
    if (k && pthread_mutex_init(&k->lock, NULL) != 0) {
        free(k);
        return NULL;
    }
    if (k) {
        k->refs = 1;
    }
    return k;
}

struct sql_audit_keys *sql_audit_keys_ref(struct sql_audit_keys *k)
{
    pthread_mutex_lock(&k->lock);
    k->refs++;
    pthread_mutex_unlock(&k->lock);
    return k;
}

void sql_audit_keys_unref(struct sql_audit_keys *k)
{
    if (!k) {
        return;
    }
    pthread_mutex_lock(&k->lock);
    int last = --k->refs == 0;
    pthread_mutex_unlock(&k->lock);
    if (last) {
        EVP_PKEY_free(k->key);
        EVP_PKEY_free(k->next);
        pthread_mutex_destroy(&k->lock);
        free(k);
    }
}

int sql_audit_signs(struct sql_store *q)
{
    pthread_mutex_lock(&q->audit_keys->lock);
    int signs = q->audit_keys->key != NULL;
    pthread_mutex_unlock(&q->audit_keys->lock);
    return signs;
}

/* *slot = key, with a reference of its own (key may be NULL). */
static enum store_rc sql_audit_keep(struct sql_store *q, EVP_PKEY **slot, EVP_PKEY *key)
{
    if (key && EVP_PKEY_up_ref(key) != 1) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit: cannot keep the key");
        return STORE_ERROR;
    }
    pthread_mutex_lock(&q->audit_keys->lock);
    EVP_PKEY *old = *slot;
    *slot = key;
    pthread_mutex_unlock(&q->audit_keys->lock);
    EVP_PKEY_free(old);
    return STORE_OK;
}

struct sql_log_key {
    char hex[AUDIT_KEY_HEX_LEN + 1]; /* "" when no checkpoint names one */
};

static int sql_log_key_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_log_key *k = userdata;
    (void)fn;
    (void)audit_details_log_key(col(r, 0), k->hex);
    return 1;
}

/* Whether the log announces a key after pub: a checkpoint signed with pub names next_public_key
 * (details' members are sorted: next_public_key comes before public_key). Read only when a
 * server's key is not the log's; a key once retired stays so, and is not looked up again. */
static enum store_rc sql_audit_retired(struct sql_store *q, const char *pub, int *ret)
{
    char pattern[AUDIT_KEY_HEX_LEN + 64];
    int64_t n = 0;
    pthread_mutex_lock(&q->audit_keys->lock);
    *ret = strcmp(q->audit_keys->retired, pub) == 0;
    pthread_mutex_unlock(&q->audit_keys->lock);
    if (*ret) {
        return STORE_OK;
    }
    snprintf(pattern, sizeof pattern, "%%\"next_public_key\":\"%%\"public_key\":\"%s\"%%", pub);
    const char *args[] = { AUDIT_CHECKPOINT_ACTION, pattern };
    enum store_rc rc =
            q->db->walk(q, "SELECT count(*) FROM audit WHERE action = $1 AND details LIKE $2", 2,
                        args, 1, sql_int_each, NULL, &n);
    *ret = rc == STORE_OK && n > 0;
    if (*ret) {
        pthread_mutex_lock(&q->audit_keys->lock);
        memcpy(q->audit_keys->retired, pub, sizeof q->audit_keys->retired);
        pthread_mutex_unlock(&q->audit_keys->lock);
    }
    return rc;
}

/* The key checkpoints are signed with now, a reference (EVP_PKEY_free): the log's key - the one
 * its last checkpoint announces, else the one that signed it; any key before the first - when it
 * is this store's key or the staged next one. NOT_FOUND when this store's key is one the log has
 * announced a successor of and the next one is not it: a node that has not taken a rotation yet
 * would sign a checkpoint the chain of keys refuses (docs/operations.md). A key the log never
 * named (a node given no audit.key, a lost key replaced) does sign: verification fails where it
 * begins, which is what it is. STORE_ERROR without a key. */
static enum store_rc sql_audit_signer(struct sql_store *q, EVP_PKEY **ret)
{
    struct sql_log_key log = { "" };
    char pub[AUDIT_KEY_HEX_LEN + 1];
    const char *args[] = { AUDIT_CHECKPOINT_ACTION };
    EVP_PKEY *key = NULL;
    EVP_PKEY *next = NULL;
    pthread_mutex_lock(&q->audit_keys->lock);
    if (q->audit_keys->key && EVP_PKEY_up_ref(q->audit_keys->key) == 1) {
        key = q->audit_keys->key;
    }
    if (q->audit_keys->next && EVP_PKEY_up_ref(q->audit_keys->next) == 1) {
        next = q->audit_keys->next;
    }
    pthread_mutex_unlock(&q->audit_keys->lock);
    enum store_rc rc = STORE_ERROR;
    if (!key) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit: no signing key");
        goto out;
    }
    rc = q->db->walk(q, "SELECT details FROM audit WHERE action = $1 ORDER BY seq DESC LIMIT 1", 1,
                     args, 0, sql_log_key_each, NULL, &log);
    if (rc != STORE_OK) {
        goto out;
    }
    char next_pub[AUDIT_KEY_HEX_LEN + 1] = "";
    int retired = 0;
    if (audit_public_key_hex(key, pub, NULL) != AL_OK ||
        (next && audit_public_key_hex(next, next_pub, NULL) != AL_OK)) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit: the key is not an Ed25519 key");
        rc = STORE_ERROR;
    } else if (next && strcmp(next_pub, log.hex) == 0) {
        *ret = next;
        next = NULL;
    } else if (!log.hex[0] || strcmp(pub, log.hex) == 0 ||
               ((rc = sql_audit_retired(q, pub, &retired)) == STORE_OK && !retired)) {
        *ret = key;
        key = NULL;
    } else if (rc == STORE_OK) {
        snprintf(q->errmsg, sizeof q->errmsg,
                 "audit: the log is signed with the key %.16s... now, which this server does not "
                 "hold: copy the rotated audit.key into its data directory and reload it (SIGHUP)",
                 log.hex);
        rc = STORE_NOT_FOUND;
    }
out:
    EVP_PKEY_free(key);
    EVP_PKEY_free(next);
    return rc;
}

/* A checkpoint of (seq, hash), signed now with the log's key (sql_audit_signer). */
static enum store_rc sql_audit_sign(struct sql_store *q, int64_t seq, const char *hash,
                                    struct store_checkpoint *ret)
{
    struct al_error err;
    EVP_PKEY *key = NULL;
    memset(&err, 0, sizeof err);
    enum store_rc rc = sql_audit_signer(q, &key);
    if (rc != STORE_OK) {
        return rc;
    }
    ret->seq = seq;
    snprintf(ret->hash, sizeof ret->hash, "%s", hash);
    sql_now(ret->time);
    if (audit_public_key_hex(key, ret->public_key, &err) != AL_OK ||
        audit_checkpoint_sign(key, (uint64_t)seq, hash, ret->signature, &err) != AL_OK) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit checkpoint: %.200s", err.message);
        rc = STORE_ERROR;
    }
    EVP_PKEY_free(key);
    return rc;
}

/* Signs (seq, hash) into *ret and appends the checkpoint record of it (db->audit_insert). */
static enum store_rc sql_audit_append_checkpoint(struct sql_store *q, int64_t seq, const char *hash,
                                                 struct store_checkpoint *ret)
{
    char cp_hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t cp_seq = 0;
    struct buf details;
    buf_init(&details, 1024);
    enum store_rc rc = sql_audit_sign(q, seq, hash, ret);
    if (rc == STORE_OK && audit_checkpoint_details(&details, (uint64_t)seq, hash, ret->public_key,
                                                   ret->signature) != BUF_OK) {
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = q->db->audit_insert(q, AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION, "audit", NULL,
                                 details.data, &cp_seq, cp_hash);
    }
    if (rc == STORE_OK) {
        q->appended = *ret;
        q->appended_valid = 1;
    }
    buf_done(&details);
    return rc;
}

enum store_rc sql_audit_append(struct store *s, const char *actor, const char *action,
                               const char *subject, const char *department,
                               const char *details_json, int64_t *ret_seq)
{
    struct sql_store *q = sql_of(s);
    struct store_checkpoint cp;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    int scope = 0;
    int changed = 0;
    struct buf total;
    struct al_error err;
    memset(&err, 0, sizeof err);
    buf_init(&total, SQL_LINE_MAX);
    /* a guest's or a connector's text that is not Unicode must not make the record fail (and
     * with it the rest of what it commits with): it is recorded replaced, with its digest */
    if (details_json &&
        audit_details_total(details_json, strlen(details_json), &total, &changed, &err) != AL_OK) {
        snprintf(q->errmsg, sizeof q->errmsg, "audit record: %.200s", err.message);
        buf_done(&total);
        return STORE_ERROR;
    }
    if (changed) {
        details_json = total.data;
    }
    enum store_rc rc = q->db->audit_open(q, 1, &scope);
    if (rc == STORE_OK) {
        rc = q->db->audit_insert(q, actor, action, subject, department, details_json, &seq, hash);
    }
    if (rc == STORE_OK && sql_audit_signs(q) &&
        seq % SQL_CHECKPOINT_EVERY == SQL_CHECKPOINT_EVERY - 1) {
        /* without a scope, only when another connection's records moved it to a checkpoint's
         * place; none when this server does not hold the log's key (a rotation it has not taken
         * yet): the next checkpoint signed with that key covers these records */
        rc = sql_audit_append_checkpoint(q, seq, hash, &cp);
        rc = rc == STORE_NOT_FOUND ? STORE_OK : rc;
    }
    rc = q->db->audit_close(q, scope, rc);
    if (rc != STORE_OK) {
        q->appended_valid = 0; /* its scope was undone */
    }
    if (rc == STORE_CONFLICT) {
        snprintf(q->errmsg, sizeof q->errmsg, "%s: audit: conflict", s->ops->name);
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK && ret_seq) {
        *ret_seq = seq;
    }
    buf_done(&total);
    return rc;
}

/* Inside the backend's audit scope, which keeps other appends out. */
enum store_rc sql_audit_checkpoint(struct store *s, int append, struct store_checkpoint *ret)
{
    struct sql_store *q = sql_of(s);
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    int sealed = 0;
    int scope = 0;
    enum store_rc rc = q->db->audit_open(q, 0, &scope);
    if (rc == STORE_OK) {
        rc = sql_audit_last(q, &seq, hash, &sealed);
    }
    if (rc == STORE_OK && seq == 0) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK && append && !sealed) {
        struct store_checkpoint cp;
        rc = sql_audit_append_checkpoint(q, seq, hash, &cp);
        if (rc == STORE_OK) {
            rc = sql_audit_last(q, &seq, hash, NULL);
        }
    }
    if (rc == STORE_OK) {
        rc = sql_audit_sign(q, seq, hash, ret);
    }
    if (rc == STORE_NOT_FOUND && seq > 0) {
        rc = STORE_CONFLICT; /* not this server's key to sign with now: errmsg says so */
    }
    rc = q->db->audit_close(q, scope, rc);
    if (rc != STORE_OK) {
        q->appended_valid = 0;
    }
    return rc;
}

enum store_rc sql_audit_take_appended(struct store *s, struct store_checkpoint *ret)
{
    struct sql_store *q = sql_of(s);
    if (!q->appended_valid) {
        return STORE_NOT_FOUND;
    }
    *ret = q->appended;
    q->appended_valid = 0;
    return STORE_OK;
}

struct sql_chain {
    struct sql_store *q;
    char prev[AUDIT_HASH_HEX_LEN + 1];
    struct buf line;
    enum store_rc rc;
};

static int sql_chain_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_chain *c = userdata;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    char seq[24];
    struct al_error err;
    (void)fn;
    memset(&err, 0, sizeof err);
    struct audit_record rec = { (uint64_t)num(r, 0),        col(r, 1), col(r, 2), col(r, 3),
                                col(r, 4) ? col(r, 4) : "", col(r, 5), col(r, 6), c->prev };
    buf_reset(&c->line);
    if (audit_record_write(&rec, &c->line, hash, &err) != AL_OK || buf_append_byte(&c->line, 0)) {
        snprintf(c->q->errmsg, sizeof c->q->errmsg, "audit: cannot chain seq %" PRIu64 ": %.150s",
                 rec.seq, err.message);
        c->rc = STORE_ERROR;
        return 1;
    }
    snprintf(seq, sizeof seq, "%" PRIu64, rec.seq);
    const char *args[] = { c->prev, hash, c->line.data, seq };
    c->rc = c->q->db->exec(c->q, "UPDATE audit SET prev = $1, hash = $2, line = $3 WHERE seq = $4",
                           4, args, NULL);
    memcpy(c->prev, hash, sizeof hash);
    return c->rc != STORE_OK;
}

enum store_rc sql_audit_chain_legacy(struct sql_store *q)
{
    struct sql_chain c = { .q = q, .rc = STORE_OK };
    memset(c.prev, '0', AUDIT_HASH_HEX_LEN);
    buf_init(&c.line, SQL_LINE_MAX);
    enum store_rc rc = q->db->walk(q,
                                   "SELECT seq, time, actor, action, subject, department, details "
                                   "FROM audit WHERE line IS NULL ORDER BY seq",
                                   0, NULL, 0, sql_chain_each, NULL, &c);
    buf_done(&c.line);
    return rc == STORE_OK ? c.rc : rc;
}

enum store_rc sql_audit_search(struct store *s, int64_t after_seq, int64_t limit,
                               const struct store_audit_filter *filter, store_audit_fn *fn,
                               void *userdata)
{
    static const struct store_audit_filter none = { NULL, NULL, NULL };
    const struct store_audit_filter *f = filter ? filter : &none;
    const char *args[] = { f->action, f->run, f->template_name };
    struct sql_store *q = sql_of(s);
    return sql_walk_pages(q, q->db->audit_search, args, after_seq, limit, q->db->audit_page,
                          sql_audit_each, (void *)fn, userdata);
}

enum store_rc sql_audit_list(struct store *s, int64_t after_seq, int64_t limit, store_audit_fn *fn,
                             void *userdata)
{
    return sql_audit_search(s, after_seq, limit, NULL, fn, userdata);
}

enum store_rc sql_audit_set_key(struct store *s, EVP_PKEY *key)
{
    struct sql_store *q = sql_of(s);
    return sql_audit_keep(q, &q->audit_keys->key, key);
}

enum store_rc sql_audit_set_next_key(struct store *s, EVP_PKEY *key)
{
    struct sql_store *q = sql_of(s);
    return sql_audit_keep(q, &q->audit_keys->next, key);
}

enum store_rc sql_audit_head(struct store *s, int64_t *ret_seq)
{
    return sql_int(sql_of(s), "SELECT coalesce(max(seq), 0) FROM audit", ret_seq);
}

/* ---------------------------------------------------------------- templates (0003) */

enum store_rc sql_template_create(struct store *s, const char *name, const char *department,
                                  const char *description, const char *created_by)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc = sql_exists(q, "SELECT 1 FROM departments WHERE name = $1", 1, &department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sql_now(now);
    const char *args[] = { name, department, description ? description : "", now, created_by };
    return sql_insert(q,
                      "INSERT INTO templates(name, department, description, created, created_by) "
                      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                      5, args);
}

#define SQL_TEMPLATE_SELECT \
    "SELECT name, department, description, created, created_by FROM templates "

static int sql_template_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_template t = { col(r, 0), col(r, 1), col(r, 2), col(r, 3), col(r, 4) };
    return ((store_template_fn *)fn)(userdata, &t);
}

enum store_rc sql_template_get(struct store *s, const char *name, store_template_fn *fn,
                               void *userdata)
{
    return sql_walk(s, SQL_TEMPLATE_SELECT "WHERE name = $1", 1, &name, 1, sql_template_each,
                    (void *)fn, userdata);
}

enum store_rc sql_template_list(struct store *s, store_template_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_TEMPLATE_SELECT "ORDER BY name", 0, NULL, 0, sql_template_each,
                    (void *)fn, userdata);
}

static int sql_version_number_each(const struct sql_row *r, void *fn, void *userdata)
{
    (void)fn;
    *(int64_t *)userdata = num(r, 0);
    return 0; /* on to the end: the INSERT is done with it */
}

enum store_rc sql_version_create(struct store *s, const struct store_version *v,
                                 int64_t *ret_version)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc =
            sql_exists(q, "SELECT 1 FROM templates WHERE name = $1", 1, &v->template_name);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    int64_t version = 0;
    sql_now(now);
    const char *args[] = { v->template_name, v->source,   v->language, v->input_schema,
                           v->functions,     v->autonomy, v->limits,   v->digest,
                           v->author,        now,         v->workspace };
    /* the CAST: PostgreSQL would not know $1's type in the select list; the WHERE tells SQLite's
     * parser that ON CONFLICT is the upsert's */
    rc = q->db->walk(q,
                     "INSERT INTO versions(template, version, state, source, language, "
                     "input_schema, functions, autonomy, limits, digest, author, created, "
                     "workspace) SELECT CAST($1 AS TEXT), coalesce(max(version), 0) + 1, 'draft', "
                     "$2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM versions WHERE template = "
                     "CAST($1 AS TEXT) ON CONFLICT DO NOTHING RETURNING version",
                     11, args, 1, sql_version_number_each, NULL, &version);
    if (rc == STORE_OK) {
        *ret_version = version;
    }
    return rc == STORE_NOT_FOUND ? STORE_CONFLICT : rc;
}

#define SQL_VERSION_COLUMNS                                                                       \
    "SELECT v.template, v.version, t.department, v.state, v.source, v.language, v.input_schema, " \
    "v.functions, v.autonomy, v.limits, v.digest, v.author, v.created, v.approved_by, "           \
    "v.approved, v.approve_comment, v.submitted_by, v.submitted, v.rejected_by, v.rejected, "     \
    "v.reject_comment, v.revoked_by, v.revoked, v.revoke_reason, v.workspace FROM versions v "    \
    "JOIN templates t ON t.name = v.template "

static int sql_version_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_version v = {
        .template_name = col(r, 0),
        .version = num(r, 1),
        .department = col(r, 2),
        .state = col(r, 3),
        .source = col(r, 4),
        .language = col(r, 5),
        .input_schema = col(r, 6),
        .functions = col(r, 7),
        .autonomy = col(r, 8),
        .limits = col(r, 9),
        .digest = col(r, 10),
        .author = col(r, 11),
        .created = col(r, 12),
        .approved_by = col(r, 13),
        .approved = col(r, 14),
        .approve_comment = col(r, 15),
        .submitted_by = col(r, 16),
        .submitted = col(r, 17),
        .rejected_by = col(r, 18),
        .rejected = col(r, 19),
        .reject_comment = col(r, 20),
        .revoked_by = col(r, 21),
        .revoked = col(r, 22),
        .revoke_reason = col(r, 23),
        .workspace = col(r, 24),
    };
    return ((store_version_fn *)fn)(userdata, &v);
}

enum store_rc sql_version_get(struct store *s, const char *template_name, int64_t version,
                              store_version_fn *fn, void *userdata)
{
    char number[24];
    const char *args[] = { template_name, number };
    if (version < 0) {
        return STORE_NOT_FOUND;
    }
    snprintf(number, sizeof number, "%" PRId64, version);
    return sql_walk(s,
                    version == 0 ? SQL_VERSION_COLUMNS "WHERE v.template = $1 AND v.state = "
                                                       "'approved' ORDER BY v.version DESC LIMIT 1"
                                 : SQL_VERSION_COLUMNS "WHERE v.template = $1 AND v.version = $2",
                    version == 0 ? 1 : 2, args, 1, sql_version_each, (void *)fn, userdata);
}

enum store_rc sql_version_list(struct store *s, const char *template_name, store_version_fn *fn,
                               void *userdata)
{
    return sql_walk(s, SQL_VERSION_COLUMNS "WHERE v.template = $1 ORDER BY v.version", 1,
                    &template_name, 0, sql_version_each, (void *)fn, userdata);
}

enum store_rc sql_version_list_with_workspace(struct store *s, const char *department,
                                              store_version_fn *fn, void *userdata)
{
    return sql_walk(s,
                    SQL_VERSION_COLUMNS "WHERE t.department = $1 AND v.state = 'approved' AND "
                                        "v.workspace IS NOT NULL ORDER BY v.template, v.version",
                    1, &department, 0, sql_version_each, (void *)fn, userdata);
}

enum store_rc sql_version_set_state(struct store *s, const char *template_name, int64_t version,
                                    const char *from_state, const char *to_state, const char *by,
                                    const char *comment)
{
    struct sql_store *q = sql_of(s);
    /* the columns come from this table, never from the caller; a submission keeps no comment,
     * which is the last parameter, so that every parameter of a statement is used (PostgreSQL
     * infers each one's type from its use) */
    static const char *const sql[][2] = {
        { "submitted", "UPDATE versions SET state = $1, submitted = $2, submitted_by = $3 "
                       "WHERE template = $4 AND version = $5 AND state = $6" },
        { "approved", "UPDATE versions SET state = $1, approved = $2, approved_by = $3, "
                      "approve_comment = $7 WHERE template = $4 AND version = $5 AND state = $6" },
        { "rejected", "UPDATE versions SET state = $1, rejected = $2, rejected_by = $3, "
                      "reject_comment = $7 WHERE template = $4 AND version = $5 AND state = $6" },
        { "revoked", "UPDATE versions SET state = $1, revoked = $2, revoked_by = $3, "
                     "revoke_reason = $7 WHERE template = $4 AND version = $5 AND state = $6" },
    };
    const char *text = NULL;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (strcmp(sql[i][0], to_state) == 0) {
            text = sql[i][1];
        }
    }
    if (!text) {
        snprintf(q->errmsg, sizeof q->errmsg, "%s: no state %.64s", s->ops->name, to_state);
        return STORE_ERROR;
    }
    char now[32];
    char number[24];
    int64_t changes = 0;
    sql_now(now);
    snprintf(number, sizeof number, "%" PRId64, version);
    const char *args[] = { to_state, now, by, template_name, number, from_state, comment };
    enum store_rc rc =
            q->db->exec(q, text, strcmp(to_state, "submitted") == 0 ? 6 : 7, args, &changes);
    if (rc == STORE_CONFLICT) {
        snprintf(q->errmsg, sizeof q->errmsg, "%s: version state: constraint", s->ops->name);
        return STORE_ERROR;
    }
    if (rc != STORE_OK || changes > 0) {
        return rc;
    }
    rc = sql_exists(q, "SELECT 1 FROM versions WHERE template = $1 AND version = $2", 2, &args[3]);
    return rc == STORE_OK ? STORE_CONFLICT : rc;
}

/* ---------------------------------------------------------------- runs and approvals */

static int sql_run_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_run run = {
        .seq = num(r, 0),
        .id = col(r, 1),
        .template_name = col(r, 2),
        .version = num(r, 3),
        .department = col(r, 4),
        .principal = col(r, 5),
        .status = col(r, 6),
        .input = col(r, 7),
        .source = col(r, 8),
        .language = col(r, 9),
        .functions = col(r, 10),
        .outcome = col(r, 11),
        .created = col(r, 12),
        .updated = col(r, 13),
        .seed = col(r, 14),
        .clock_ms = num(r, 15),
        .recovered = num(r, 16),
        .forked_from = col(r, 17),
        .at_call = num(r, 18),
    };
    return ((store_run_fn *)fn)(userdata, &run);
}

enum store_rc sql_run_create(struct store *s, const struct store_run *r)
{
    char now[32];
    char version[24];
    sql_now(now);
    if (r->created) {
        snprintf(now, sizeof now, "%s", r->created); /* the time the run's clock starts at */
    }
    snprintf(version, sizeof version, "%" PRId64, r->version);
    int adhoc = !r->template_name || !r->template_name[0];
    const char *args[] = { r->id,
                           adhoc ? NULL : r->template_name,
                           adhoc ? NULL : version,
                           r->department,
                           r->principal,
                           r->status,
                           r->input,
                           r->source,
                           r->language,
                           r->functions,
                           now,
                           now };
    return sql_insert(sql_of(s),
                      "INSERT INTO runs (id, template, version, department, principal, status, "
                      "input, source, language, functions, created, updated) VALUES ($1, $2, $3, "
                      "$4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
                      12, args);
}

enum store_rc sql_run_get(struct store *s, const char *id, store_run_fn *fn, void *userdata)
{
    return sql_walk(s, "SELECT " SQL_RUN_COLUMNS " FROM runs WHERE id = $1", 1, &id, 1,
                    sql_run_each, (void *)fn, userdata);
}

/* In pages of db->run_page: every run ever, with its input and outcome, is what airlockd's start
 * walks. */
enum store_rc sql_run_list(struct store *s, const struct store_run_filter *f, store_run_fn *fn,
                           void *userdata)
{
    const char *args[] = { f ? f->template_name : NULL, f ? f->status : NULL,
                           f ? f->principal : NULL };
    struct sql_store *q = sql_of(s);
    /* the CASTs: PostgreSQL would not know the type of a parameter only tested for NULL */
    return sql_walk_pages(q,
                          "SELECT " SQL_RUN_COLUMNS " FROM runs WHERE seq > CAST($1 AS BIGINT) "
                          "AND (CAST($3 AS TEXT) IS NULL OR template = $3) AND (CAST($4 AS TEXT) "
                          "IS NULL OR status = $4) AND (CAST($5 AS TEXT) IS NULL OR principal = "
                          "$5) ORDER BY seq LIMIT CAST($2 AS BIGINT)",
                          args, f ? f->after_seq : 0, INT64_MAX, q->db->run_page, sql_run_each,
                          (void *)fn, userdata);
}

enum store_rc sql_run_set_status(struct store *s, const char *id, const char *from,
                                 const char *status, const char *outcome)
{
    struct sql_store *q = sql_of(s);
    char now[32];
    int64_t changes = 0;
    sql_now(now);
    const char *args[] = { status, outcome, now, id, from };
    enum store_rc rc = q->db->exec(q, q->db->run_set_status, 5, args, &changes);
    return sql_changed_or(q, rc, changes, "SELECT 1 FROM runs WHERE id = $1", id);
}

enum store_rc sql_run_set_continuation(struct store *s, const char *id, const char *token)
{
    const char *args[] = { token, id };
    return sql_change(sql_of(s), "UPDATE runs SET continuation = $1 WHERE id = $2", 2, args);
}

static int sql_dup_each(const struct sql_row *r, void *fn, void *userdata)
{
    (void)fn;
    *(char **)userdata = strdup(col(r, 0));
    return 1;
}

enum store_rc sql_run_take_continuation(struct store *s, const char *id, char **ret_token)
{
    struct sql_store *q = sql_of(s);
    char *token = NULL;
    int64_t changes = 0;
    enum store_rc rc =
            q->db->walk(q, q->db->run_take_continuation, 1, &id, 1, sql_dup_each, NULL, &token);
    if (rc == STORE_OK && !token) {
        snprintf(q->errmsg, sizeof q->errmsg, "out of memory");
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = q->db->exec(q,
                         "UPDATE runs SET continuation = NULL WHERE id = $1 AND continuation IS "
                         "NOT NULL",
                         1, &id, &changes);
        if (rc == STORE_OK && changes != 1) {
            rc = STORE_NOT_FOUND;
        }
    }
    if (rc == STORE_OK) {
        *ret_token = token;
    } else {
        free(token);
    }
    return rc;
}

#define SQL_APPROVAL_COLUMNS                                                                   \
    "id, run, kind, interruption, function, args, status, requested_by, department, "          \
    "COALESCE(template, ''), COALESCE(version, 0), created, decided_by, decided, comment, "    \
    "consumed, connector, sent, idempotency_key, COALESCE(call_seq, 0), args_sha256, result, " \
    "line"

static int sql_approval_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_approval a = {
        .id = col(r, 0),
        .run = col(r, 1),
        .kind = col(r, 2),
        .interruption = col(r, 3),
        .function = col(r, 4),
        .args = col(r, 5),
        .status = col(r, 6),
        .requested_by = col(r, 7),
        .department = col(r, 8),
        .template_name = col(r, 9),
        .version = num(r, 10),
        .created = col(r, 11),
        .decided_by = col(r, 12),
        .decided = col(r, 13),
        .comment = col(r, 14),
        .consumed = (int)num(r, 15),
        .connector = col(r, 16),
        .sent = col(r, 17),
        .idempotency_key = col(r, 18),
        .call_seq = num(r, 19),
        .args_sha256 = col(r, 20),
        .result = col(r, 21),
        .line = num(r, 22),
    };
    return ((store_approval_fn *)fn)(userdata, &a);
}

enum store_rc sql_approval_create(struct store *s, const struct store_approval *a)
{
    char now[32];
    char version[24];
    char call_seq[24];
    char line[24];
    sql_now(now);
    snprintf(line, sizeof line, "%" PRId64, a->line > 0 ? a->line : 0);
    snprintf(version, sizeof version, "%" PRId64, a->version);
    snprintf(call_seq, sizeof call_seq, "%" PRId64, a->call_seq);
    int adhoc = !a->template_name || !a->template_name[0];
    const char *args[] = { a->id,
                           a->run,
                           a->kind,
                           a->interruption,
                           a->function,
                           a->args,
                           a->requested_by,
                           a->department,
                           adhoc ? NULL : a->template_name,
                           adhoc ? NULL : version,
                           now,
                           a->connector,
                           a->sent,
                           a->idempotency_key,
                           a->call_seq > 0 ? call_seq : NULL,
                           a->args_sha256,
                           line };
    return sql_insert(sql_of(s),
                      "INSERT INTO approvals (id, run, kind, interruption, function, args, status, "
                      "requested_by, department, template, version, created, connector, sent, "
                      "idempotency_key, call_seq, args_sha256, line) VALUES ($1, $2, $3, $4, $5, "
                      "$6, 'pending', $7, $8, $9, $10, $11, $12, $13, $14, CAST($15 AS BIGINT), "
                      "$16, CAST($17 AS BIGINT)) ON CONFLICT DO NOTHING",
                      17, args);
}

enum store_rc sql_approval_get(struct store *s, const char *id, store_approval_fn *fn,
                               void *userdata)
{
    return sql_walk(s, "SELECT " SQL_APPROVAL_COLUMNS " FROM approvals WHERE id = $1", 1, &id, 1,
                    sql_approval_each, (void *)fn, userdata);
}

enum store_rc sql_approval_list(struct store *s, const char *run, const char *status,
                                store_approval_fn *fn, void *userdata)
{
    const char *args[] = { run, status };
    /* the CASTs: PostgreSQL would not know the type of a parameter only tested for NULL */
    return sql_walk(s,
                    "SELECT " SQL_APPROVAL_COLUMNS " FROM approvals WHERE (CAST($1 AS "
                    "TEXT) IS NULL OR run = $1) AND (CAST($2 AS TEXT) IS NULL OR "
                    "status = $2) ORDER BY seq DESC",
                    2, args, 0, sql_approval_each, (void *)fn, userdata);
}

static int sql_approval_pending_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_approval a = {
        .id = col(r, 0),
        .run = col(r, 1),
        .kind = col(r, 2),
        .status = "pending",
        .department = col(r, 3),
        .template_name = "",
        .created = col(r, 4),
    };
    return ((store_approval_fn *)fn)(userdata, &a);
}

enum store_rc sql_approval_pending_list(struct store *s, store_approval_fn *fn, void *userdata)
{
    return sql_walk(s,
                    "SELECT id, run, kind, department, created FROM approvals WHERE status = "
                    "'pending' ORDER BY seq",
                    0, NULL, 0, sql_approval_pending_each, (void *)fn, userdata);
}

/* A pending approval decided: status, who, when, the comment and (answered) the result. */
static enum store_rc sql_approval_set(struct store *s, const char *id, const char *status,
                                      const char *by, const char *comment, const char *result)
{
    struct sql_store *q = sql_of(s);
    char now[32];
    int64_t changes = 0;
    sql_now(now);
    const char *args[] = { status, by, now, comment, result, id };
    enum store_rc rc = q->db->exec(q,
                                   "UPDATE approvals SET status = $1, decided_by = $2, decided = "
                                   "$3, comment = $4, result = $5 WHERE id = $6 AND status = "
                                   "'pending'",
                                   6, args, &changes);
    return sql_changed_or(q, rc, changes, "SELECT 1 FROM approvals WHERE id = $1", id);
}

enum store_rc sql_approval_decide(struct store *s, const char *id, const char *status,
                                  const char *by, const char *comment)
{
    return sql_approval_set(s, id, status, by, comment, NULL);
}

enum store_rc sql_approval_answer(struct store *s, const char *id, const char *by,
                                  const char *comment, const char *result)
{
    return sql_approval_set(s, id, "answered", by, comment, result);
}

enum store_rc sql_approval_consume(struct store *s, const char *run)
{
    return sql_exec(s,
                    "UPDATE approvals SET consumed = 1 WHERE run = $1 AND status IN ('approved', "
                    "'denied', 'answered')",
                    1, &run);
}

/* ---------------------------------------------------------------- connectors (0005) */

enum store_rc sql_connector_create(struct store *s, const struct store_connector *c)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc =
            sql_exists(q, "SELECT 1 FROM departments WHERE name = $1", 1, &c->department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    char timeout[24];
    sql_now(now);
    snprintf(timeout, sizeof timeout, "%" PRId64, c->timeout_ms);
    const char *args[] = {
        c->name,           c->department,   c->url,       c->signing_secret_sealed,
        c->headers_sealed, c->header_names, c->functions, now,
        c->created_by,     timeout
    };
    return sql_insert(q,
                      "INSERT INTO connectors(name, department, url, signing_secret, headers, "
                      "header_names, functions, created, created_by, timeout_ms) VALUES ($1, $2, "
                      "$3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
                      10, args);
}

#define SQL_CONNECTOR_SELECT                                                                       \
    "SELECT name, department, url, signing_secret, headers, header_names, functions, timeout_ms, " \
    "created, created_by FROM connectors "

static int sql_connector_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_connector c = { col(r, 0), col(r, 1), col(r, 2), col(r, 3), col(r, 4),
                                 col(r, 5), col(r, 6), num(r, 7), col(r, 8), col(r, 9) };
    return ((store_connector_fn *)fn)(userdata, &c);
}

enum store_rc sql_connector_get(struct store *s, const char *name, store_connector_fn *fn,
                                void *userdata)
{
    return sql_walk(s, SQL_CONNECTOR_SELECT "WHERE name = $1", 1, &name, 1, sql_connector_each,
                    (void *)fn, userdata);
}

enum store_rc sql_connector_list(struct store *s, store_connector_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_CONNECTOR_SELECT "ORDER BY name", 0, NULL, 0, sql_connector_each,
                    (void *)fn, userdata);
}

/* ---------------------------------------------------------------- mounts (0014) */

enum store_rc sql_mount_create(struct store *s, const struct store_mount *m)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc =
            sql_exists(q, "SELECT 1 FROM departments WHERE name = $1", 1, &m->department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sql_now(now);
    const char *args[] = { m->name,          m->department, m->kind,      m->path,
                           m->endpoint,      m->bucket,     m->region,    m->access_key_id,
                           m->secret_sealed, now,           m->created_by };
    return sql_insert(q,
                      "INSERT INTO mounts(name, department, kind, path, endpoint, bucket, region, "
                      "access_key_id, secret, created, created_by) VALUES ($1, $2, $3, $4, $5, "
                      "$6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
                      11, args);
}

#define SQL_MOUNT_SELECT                                                                     \
    "SELECT name, department, kind, path, endpoint, bucket, region, access_key_id, secret, " \
    "created, created_by FROM mounts "

static int sql_mount_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_mount m = { col(r, 0), col(r, 1), col(r, 2), col(r, 3), col(r, 4), col(r, 5),
                             col(r, 6), col(r, 7), col(r, 8), col(r, 9), col(r, 10) };
    return ((store_mount_fn *)fn)(userdata, &m);
}

enum store_rc sql_mount_get(struct store *s, const char *name, store_mount_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_MOUNT_SELECT "WHERE name = $1", 1, &name, 1, sql_mount_each, (void *)fn,
                    userdata);
}

enum store_rc sql_mount_list(struct store *s, store_mount_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_MOUNT_SELECT "ORDER BY name", 0, NULL, 0, sql_mount_each, (void *)fn,
                    userdata);
}

enum store_rc sql_mount_delete(struct store *s, const char *name)
{
    return sql_change(sql_of(s), "DELETE FROM mounts WHERE name = $1", 1, &name);
}

/* ---------------------------------------------------------------- administration (0016) */

enum store_rc sql_principal_set_identity(struct store *s, const char *name, const char *identity)
{
    struct sql_store *q = sql_of(s);
    int64_t changes = 0;
    const char *args[] = { identity, name };
    /* a taken identity is a row not changed, not a unique violation (which would end the
     * caller's PostgreSQL transaction) */
    enum store_rc rc =
            q->db->exec(q,
                        "UPDATE principals SET identity = $1 WHERE name = $2 AND "
                        "(CAST($1 AS TEXT) IS NULL OR NOT EXISTS (SELECT 1 FROM principals o WHERE "
                        "o.identity = $1 AND o.name <> $2))",
                        2, args, &changes);
    rc = sql_changed_or(q, rc, changes, "SELECT 1 FROM principals WHERE name = $1", name);
    /* the sessions of the identity it was linked to end for good: linked back, it signs in
     * again, its old sessions do not come back */
    return rc == STORE_OK ? sql_exec(s,
                                     "DELETE FROM sessions WHERE principal = $2 AND "
                                     "(CAST($1 AS TEXT) IS NULL OR identity <> $1)",
                                     2, args)
                          : rc;
}

enum store_rc sql_principal_set_disabled(struct store *s, const char *name, int disabled)
{
    const char *args[] = { disabled ? "1" : "0", name };
    enum store_rc rc = sql_change(sql_of(s),
                                  "UPDATE principals SET disabled = CAST($1 AS INTEGER) WHERE "
                                  "name = $2",
                                  2, args);
    /* a disable ends its sessions for good (a browser lost or stolen is what it is for):
     * enabled again, it signs in again */
    return rc == STORE_OK && disabled
                   ? sql_exec(s, "DELETE FROM sessions WHERE principal = $1", 1, &name)
                   : rc;
}

enum store_rc sql_principal_find_identity(struct store *s, const char *identity,
                                          store_principal_fn *fn, void *userdata)
{
    return sql_walk(s, SQL_PRINCIPAL_SELECT "WHERE identity = $1", 1, &identity, 1,
                    sql_principal_each, (void *)fn, userdata);
}

enum store_rc sql_principal_delete(struct store *s, const char *name)
{
    enum store_rc rc = sql_exec(s, "DELETE FROM api_keys WHERE principal = $1", 1, &name);
    if (rc == STORE_OK) {
        rc = sql_exec(s, "DELETE FROM role_grants WHERE principal = $1", 1, &name);
    }
    if (rc == STORE_OK) { /* a principal made later under its name inherits no session */
        rc = sql_exec(s, "DELETE FROM sessions WHERE principal = $1", 1, &name);
    }
    return rc == STORE_OK
                   ? sql_change(sql_of(s), "DELETE FROM principals WHERE name = $1", 1, &name)
                   : rc;
}

enum store_rc sql_department_rename(struct store *s, const char *name, const char *new_name)
{
    /* the key of departments is named by other tables: the row is copied under its new name,
     * every row naming the old one follows it, then the old row goes */
    static const char *const follow[] = {
        "UPDATE templates SET department = $2 WHERE department = $1",
        "UPDATE connectors SET department = $2 WHERE department = $1",
        "UPDATE mounts SET department = $2 WHERE department = $1",
        "UPDATE role_grants SET department = $2 WHERE department = $1",
        "UPDATE runs SET department = $2 WHERE department = $1",
        "UPDATE approvals SET department = $2 WHERE department = $1",
        "UPDATE snapshots SET department = $2 WHERE department = $1",
        "UPDATE webhooks SET department = $2 WHERE department = $1",
    };
    struct sql_store *q = sql_of(s);
    const char *args[] = { name, new_name };
    int64_t changes = 0;
    enum store_rc rc = q->db->exec(q,
                                   "INSERT INTO departments(name, autonomy, allow_adhoc, "
                                   "approval_ttl_ms, created) SELECT $2, autonomy, allow_adhoc, "
                                   "approval_ttl_ms, created FROM departments "
                                   "WHERE name = $1 ON CONFLICT DO NOTHING",
                                   2, args, &changes);
    if (rc == STORE_OK && changes == 0) {
        rc = sql_exists(q, "SELECT 1 FROM departments WHERE name = $1", 1, &name);
        return rc == STORE_OK ? STORE_CONFLICT : rc;
    }
    for (size_t i = 0; i < sizeof follow / sizeof follow[0] && rc == STORE_OK; i++) {
        rc = sql_exec(s, follow[i], 2, args);
    }
    return rc == STORE_OK ? sql_change(q, "DELETE FROM departments WHERE name = $1", 1, &name) : rc;
}

enum store_rc sql_department_usage(struct store *s, const char *name,
                                   struct store_department_usage *ret)
{
    struct sql_store *q = sql_of(s);
    struct store_department_usage u;
    memset(&u, 0, sizeof u);
    enum store_rc rc = sql_exists(q, "SELECT 1 FROM departments WHERE name = $1", 1, &name);
    const struct {
        const char *sql;
        int64_t *count;
    } counts[] = {
        { "SELECT count(*) FROM templates WHERE department = $1", &u.templates },
        { "SELECT count(*) FROM connectors WHERE department = $1", &u.connectors },
        { "SELECT count(*) FROM mounts WHERE department = $1", &u.mounts },
        { "SELECT count(*) FROM role_grants WHERE department = $1", &u.grants },
        { "SELECT count(*) FROM runs WHERE department = $1", &u.runs },
        { "SELECT count(*) FROM snapshots WHERE department = $1", &u.snapshots },
        { "SELECT count(*) FROM webhooks WHERE department = $1", &u.webhooks },
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0] && rc == STORE_OK; i++) {
        rc = q->db->walk(q, counts[i].sql, 1, &name, 1, sql_int_each, NULL, counts[i].count);
    }
    if (rc == STORE_OK) {
        *ret = u;
    }
    return rc;
}

enum store_rc sql_department_delete(struct store *s, const char *name)
{
    return sql_change(sql_of(s), "DELETE FROM departments WHERE name = $1", 1, &name);
}

enum store_rc sql_connector_update(struct store *s, const struct store_connector *c)
{
    char timeout[24];
    snprintf(timeout, sizeof timeout, "%" PRId64, c->timeout_ms);
    const char *args[] = {
        c->url, c->signing_secret_sealed, c->headers_sealed, c->header_names, c->functions, timeout,
        c->name
    };
    return sql_change(sql_of(s),
                      "UPDATE connectors SET url = $1, signing_secret = $2, headers = $3, "
                      "header_names = $4, functions = $5, timeout_ms = CAST($6 AS INTEGER) WHERE "
                      "name = $7",
                      7, args);
}

enum store_rc sql_connector_delete(struct store *s, const char *name)
{
    return sql_change(sql_of(s), "DELETE FROM connectors WHERE name = $1", 1, &name);
}

enum store_rc sql_version_list_approved(struct store *s, store_version_fn *fn, void *userdata)
{
    return sql_walk(s,
                    SQL_VERSION_COLUMNS "WHERE v.state = 'approved' ORDER BY v.template, "
                                        "v.version",
                    0, NULL, 0, sql_version_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- several nodes (0006, 0007) */

int sql_node_each(const struct sql_row *r, void *fn, void *userdata)
{
    return ((store_node_fn *)fn)(userdata, col(r, 0));
}

enum store_rc sql_node_remove(struct store *s, const char *id)
{
    return sql_change(sql_of(s), "DELETE FROM nodes WHERE id = $1", 1, &id);
}

enum store_rc sql_run_set_node(struct store *s, const char *id, const char *node)
{
    const char *args[] = { node, id };
    return sql_change(sql_of(s), "UPDATE runs SET node = $1 WHERE id = $2", 2, args);
}

enum store_rc sql_run_list_on_node(struct store *s, const char *node, store_run_fn *fn,
                                   void *userdata)
{
    /* the cancelled ones from the few execution rows, not from every run the node ever had
     * cancelled */
    return sql_walk(
            s,
            node ? "SELECT " SQL_RUN_COLUMNS " FROM runs WHERE node = $1 AND status = 'running' "
                   "UNION ALL SELECT " SQL_RUN_COLUMNS " FROM runs WHERE id IN (SELECT run FROM "
                   "executions) AND node = $1 AND status = 'cancelled' ORDER BY seq"
                 : "SELECT " SQL_RUN_COLUMNS " FROM runs WHERE node IS NULL AND status = "
                   "'running' ORDER BY seq",
            node ? 1 : 0, &node, 0, sql_run_each, (void *)fn, userdata);
}

enum store_rc sql_call_mark(struct store *s, const struct store_call *c)
{
    char now[32];
    sql_now(now);
    const char *args[] = { c->run,      c->idempotency_key,
                           c->function, c->idempotent ? "1" : "0",
                           now,         c->args_sha256 ? c->args_sha256 : "",
                           c->args };
    /* the same call marked again updates its row; another call under the key updates none */
    return sql_insert(sql_of(s),
                      "INSERT INTO calls_sent(run, idempotency_key, function, idempotent, sent, "
                      "args_sha256, args) VALUES ($1, $2, $3, CAST($4 AS INTEGER), $5, $6, $7) ON "
                      "CONFLICT (run, idempotency_key) DO UPDATE SET idempotent = "
                      "excluded.idempotent WHERE calls_sent.function = excluded.function AND "
                      "calls_sent.args_sha256 = excluded.args_sha256",
                      7, args);
}

static int sql_call_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_call c = { col(r, 0), col(r, 1), col(r, 2), (int)num(r, 3),
                            col(r, 4), col(r, 5), col(r, 6) };
    return ((store_call_fn *)fn)(userdata, &c);
}

enum store_rc sql_call_list(struct store *s, const char *run, store_call_fn *fn, void *userdata)
{
    struct sql_store *q = sql_of(s);
    return q->db->walk(q, q->db->call_list, 1, &run, 0, sql_call_each, (void *)fn, userdata);
}

enum store_rc sql_call_clear(struct store *s, const char *run)
{
    struct sql_store *q = sql_of(s);
    enum store_rc rc = q->db->exec(q, "DELETE FROM calls_sent WHERE run = $1", 1, &run, NULL);
    if (rc == STORE_OK) {
        rc = q->db->exec(q, "DELETE FROM executions WHERE run = $1", 1, &run, NULL);
    }
    return rc;
}

static int sql_id_each(const struct sql_row *r, void *fn, void *userdata)
{
    (void)fn;
    snprintf(userdata, STORE_NAME_MAX + 1, "%s", col(r, 0));
    return 0; /* on to the end: the UPDATE is done with it */
}

enum store_rc sql_run_claim_queued(struct store *s, const char *node, char *ret_id)
{
    struct sql_store *q = sql_of(s);
    char now[32];
    sql_now(now);
    const char *args[] = { node, now };
    return q->db->walk(q, q->db->run_claim_queued, 2, args, 1, sql_id_each, NULL, ret_id);
}

enum store_rc sql_execution_put(struct store *s, const struct store_execution *e)
{
    char clock[24];
    char attempt[24];
    snprintf(clock, sizeof clock, "%" PRId64, e->clock_ms);
    snprintf(attempt, sizeof attempt, "%" PRId64, e->attempt);
    const char *args[] = { e->run, e->resume, e->resolutions, clock, attempt };
    return sql_exec(s,
                    "INSERT INTO executions(run, resume, resolutions, clock_ms, attempt) VALUES "
                    "($1, $2, $3, CAST($4 AS BIGINT), CAST($5 AS INTEGER)) ON CONFLICT (run) DO "
                    "UPDATE SET resume = excluded.resume, resolutions = excluded.resolutions, "
                    "clock_ms = excluded.clock_ms, attempt = excluded.attempt",
                    5, args);
}

static int sql_execution_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_execution e = { col(r, 0), col(r, 1), col(r, 2), num(r, 3), num(r, 4) };
    return ((store_execution_fn *)fn)(userdata, &e);
}

enum store_rc sql_execution_get(struct store *s, const char *run, store_execution_fn *fn,
                                void *userdata)
{
    return sql_walk(
            s, "SELECT run, resume, resolutions, clock_ms, attempt FROM executions WHERE run = $1",
            1, &run, 1, sql_execution_each, (void *)fn, userdata);
}

enum store_rc sql_run_lock_on_node(struct store *s, const char *id, const char *node,
                                   const char *from)
{
    struct sql_store *q = sql_of(s);
    const char *args[] = { id, node, from };
    enum store_rc rc = sql_exists(q, q->db->run_lock_on_node, 3, args);
    return rc == STORE_NOT_FOUND ? STORE_CONFLICT : rc;
}

/* ---------------------------------------------------------------- the journal */

#define SQL_JOURNAL_COLUMNS                                                             \
    "position, call_id, function, args_sha256, idempotency_key, kind, sync, clock_ms, " \
    "answer_sha256"

/* The lowercase hex SHA-256 of n bytes. */
static int sql_sha256_hex(const unsigned char *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    if (EVP_Digest(n ? p : (const unsigned char *)"", n, md, &len, EVP_sha256(), NULL) != 1 ||
        len != sizeof md) {
        return -1;
    }
    for (size_t i = 0; i < sizeof md; i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    return 0;
}

static int sql_same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Compares the stored rows of a batch with the batch, in position order. */
struct sql_journal_check {
    const struct store_journal_entry *entries;
    const char (*hashes)[65];
    size_t n;
    size_t seen;
    int differs;
};

static int sql_journal_check_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_journal_check *c = userdata;
    (void)fn;
    int64_t i = num(r, 0) - c->entries[0].position;
    if (i < 0 || (size_t)i >= c->n) {
        c->differs = 1;
        return 1;
    }
    const struct store_journal_entry *e = &c->entries[i];
    c->seen++;
    c->differs = !sql_same_text(col(r, 1), e->call_id) || !sql_same_text(col(r, 2), e->function) ||
                 !sql_same_text(col(r, 3), e->args_sha256) ||
                 !sql_same_text(col(r, 4), e->idempotency_key) || num(r, 5) != e->kind ||
                 num(r, 6) != e->sync || num(r, 7) != e->clock_ms ||
                 !sql_same_text(col(r, 8), c->hashes[i]);
    return c->differs;
}

/* A batch is checked whole before anything is written: positions in a row, known kinds. */
static enum store_rc sql_journal_valid(struct sql_store *q, const struct store_journal_entry *e,
                                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *bad = e[0].position > INT64_MAX - (int64_t)n        ? "position out of range"
                          : e[i].position != e[0].position + (int64_t)i ? "positions not in a row"
                          : e[i].position < 1                           ? "position below 1"
                          : !e[i].call_id || !e[i].function || !e[i].args_sha256
                                  ? "call_id, function and args_sha256 are required"
                          : e[i].kind < STORE_JOURNAL_VALUE || e[i].kind > STORE_JOURNAL_THROW_TYPE
                                  ? "unknown kind"
                          : e[i].sync != 0 && e[i].sync != 1 ? "sync is 0 or 1"
                          : (!e[i].answer && e[i].answer_len) || e[i].answer_len > INT_MAX
                                  ? "answer"
                                  : NULL;
        if (bad) {
            snprintf(q->errmsg, sizeof q->errmsg, "%s: journal entry %zu: %s", q->base.ops->name, i,
                     bad);
            return STORE_ERROR;
        }
    }
    return STORE_OK;
}

enum store_rc sql_journal_append(struct store *s, const char *run,
                                 const struct store_journal_entry *entries, size_t n)
{
    struct sql_store *q = sql_of(s);
    char(*hashes)[65] = NULL;
    char first[24];
    char last[24];
    int64_t inserted = 0;
    if (n == 0) {
        return STORE_OK;
    }
    enum store_rc rc = sql_journal_valid(q, entries, n);
    if (rc == STORE_OK) {
        rc = sql_exists(q, "SELECT 1 FROM runs WHERE id = $1", 1, &run);
    }
    if (rc != STORE_OK) {
        return rc;
    }
    /* no gap: a replay from the journal hands out its entries by position, one after another */
    if (entries[0].position > 1) {
        snprintf(first, sizeof first, "%" PRId64, entries[0].position - 1);
        const char *args[] = { run, first };
        rc = sql_exists(q, "SELECT 1 FROM journal WHERE run = $1 AND position = CAST($2 AS BIGINT)",
                        2, args);
        if (rc == STORE_NOT_FOUND) {
            snprintf(q->errmsg, sizeof q->errmsg,
                     "%s: journal: position %" PRId64 " does not follow the run's journal",
                     s->ops->name, entries[0].position);
            return STORE_ERROR;
        }
        if (rc != STORE_OK) {
            return rc;
        }
    }
    hashes = malloc(n * sizeof *hashes);
    if (!hashes) {
        snprintf(q->errmsg, sizeof q->errmsg, "out of memory");
        return STORE_ERROR;
    }
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        if (sql_sha256_hex(entries[i].answer, entries[i].answer_len, hashes[i]) != 0) {
            snprintf(q->errmsg, sizeof q->errmsg, "%s: journal: SHA-256 failed", s->ops->name);
            rc = STORE_ERROR;
        }
    }
    /* all of the batch or none of it, also outside the caller's transaction (this nests) */
    int tx = rc == STORE_OK && (rc = s->ops->tx_begin(s)) == STORE_OK;
    if (rc == STORE_OK) {
        rc = q->db->journal_insert(q, run, entries, (const char(*)[65])hashes, n, &inserted);
    }
    /* positions the run had already: the same entries (a batch appended again), or a conflict */
    if (rc == STORE_OK && inserted != (int64_t)n) {
        struct sql_journal_check c = { entries, (const char(*)[65])hashes, n, 0, 0 };
        snprintf(first, sizeof first, "%" PRId64, entries[0].position);
        snprintf(last, sizeof last, "%" PRId64, entries[n - 1].position);
        const char *args[] = { run, first, last };
        rc = q->db->walk(q,
                         "SELECT " SQL_JOURNAL_COLUMNS " FROM journal WHERE run = $1 AND position "
                         ">= CAST($2 AS BIGINT) AND position <= CAST($3 AS BIGINT) ORDER BY "
                         "position",
                         3, args, 0, sql_journal_check_each, NULL, &c);
        if (rc == STORE_OK && (c.differs || c.seen != n)) {
            rc = STORE_CONFLICT;
        }
    }
    if (tx) {
        rc = rc == STORE_OK ? s->ops->tx_commit(s) : (s->ops->tx_rollback(s), rc);
    }
    free(hashes);
    return rc;
}

/* journal_read's walk: each row handed on with its answer, whose bytes are checked against the
 * hash they are stored under. */
struct sql_journal_walk {
    store_journal_fn *fn;
    void *userdata;
    int64_t position; /* the last row's */
    int64_t rows;     /* of the current page */
    int stopped;
    enum store_rc rc;
    struct sql_store *q;
};

static int sql_journal_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_journal_walk *w = userdata;
    char hash[65];
    size_t len = 0;
    (void)fn;
    const unsigned char *bytes = r->blob(r, 9, &len);
    const char *stored = col(r, 8);
    w->position = num(r, 0);
    w->rows++;
    if (!bytes || !stored || sql_sha256_hex(bytes, len, hash) != 0 || strcmp(hash, stored) != 0) {
        snprintf(w->q->errmsg, sizeof w->q->errmsg,
                 "%s: journal: the answer of position %" PRId64 " %s", w->q->base.ops->name,
                 w->position,
                 bytes ? "does not match its SHA-256" : "cannot be read (out of memory)");
        w->rc = STORE_ERROR;
        w->stopped = 1;
        return 1;
    }
    struct store_journal_entry e = {
        .position = w->position,
        .call_id = col(r, 1),
        .function = col(r, 2),
        .args_sha256 = col(r, 3),
        .idempotency_key = col(r, 4),
        .kind = (int)num(r, 5),
        .sync = (int)num(r, 6),
        .clock_ms = num(r, 7),
        .answer = bytes,
        .answer_len = len,
        .answer_sha256 = stored,
    };
    w->stopped = w->fn(w->userdata, &e) != 0;
    return w->stopped;
}

/* In pages of db->journal_page: a whole result is held in memory by libpq, and answers may be
 * MiBs each. */
enum store_rc sql_journal_read(struct store *s, const char *run, int64_t after_position,
                               store_journal_fn *fn, void *userdata)
{
    struct sql_store *q = sql_of(s);
    struct sql_journal_walk w = { fn, userdata, after_position, 0, 0, STORE_OK, q };
    char from[24];
    char most[24];
    const char *args[] = { run, from, most };
    int64_t page = q->db->journal_page > 0 ? q->db->journal_page : INT64_MAX;
    snprintf(most, sizeof most, "%" PRId64, page);
    while (!w.stopped) {
        snprintf(from, sizeof from, "%" PRId64, w.position);
        w.rows = 0;
        enum store_rc rc = q->db->walk(
                q,
                "SELECT j.position, j.call_id, j.function, j.args_sha256, j.idempotency_key, "
                "j.kind, j.sync, j.clock_ms, j.answer_sha256, b.bytes FROM journal j JOIN "
                "journal_blobs b ON b.sha256 = j.answer_sha256 WHERE j.run = $1 AND j.position > "
                "CAST($2 AS BIGINT) ORDER BY j.position LIMIT CAST($3 AS BIGINT)",
                3, args, 0, sql_journal_each, NULL, &w);
        if (rc != STORE_OK) {
            return rc;
        }
        if (w.rows < page) {
            break;
        }
    }
    return w.rc;
}

enum store_rc sql_journal_copy_prefix(struct store *s, const char *from_run, const char *to_run,
                                      int64_t upto_position)
{
    struct sql_store *q = sql_of(s);
    char upto[24];
    snprintf(upto, sizeof upto, "%" PRId64, upto_position);
    const char *args[] = { from_run, to_run, upto };
    enum store_rc rc = sql_exists(q, "SELECT 1 FROM runs WHERE id = $1", 1, &to_run);
    if (rc != STORE_OK) {
        return rc;
    }
    rc = sql_exists(q, "SELECT 1 FROM journal WHERE run = $1", 1, &to_run);
    if (rc != STORE_NOT_FOUND) {
        return rc == STORE_OK ? STORE_CONFLICT : rc;
    }
    /* all of the prefix or none of it: a fork must not start from part of what it asked for */
    int64_t copied = 0;
    rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = q->db->exec(q,
                         "INSERT INTO journal(run, " SQL_JOURNAL_COLUMNS
                         ") SELECT CAST($2 AS TEXT), " SQL_JOURNAL_COLUMNS
                         " FROM journal WHERE run = $1 AND position <= CAST($3 "
                         "AS BIGINT) ORDER BY position",
                         3, args, &copied);
        if (rc == STORE_OK && copied != upto_position) {
            snprintf(q->errmsg, sizeof q->errmsg,
                     "%s: journal: run %s has %" PRId64 " of the %" PRId64 " entries asked for",
                     s->ops->name, from_run, copied, upto_position);
            rc = STORE_NOT_FOUND;
        }
        rc = rc == STORE_OK ? s->ops->tx_commit(s) : (s->ops->tx_rollback(s), rc);
    }
    return rc;
}

enum store_rc sql_run_set_origin(struct store *s, const char *id, uint64_t seed, int64_t clock_ms)
{
    char hex[17];
    char clock[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, seed);
    snprintf(clock, sizeof clock, "%" PRId64, clock_ms);
    const char *args[] = { hex, clock, id };
    return sql_change(sql_of(s),
                      "UPDATE runs SET seed = $1, clock_ms = CAST($2 AS BIGINT) WHERE id = $3", 3,
                      args);
}

enum store_rc sql_run_set_fork(struct store *s, const char *id, const char *forked_from,
                               int64_t at_call)
{
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, at_call);
    const char *args[] = { forked_from, n, id };
    return sql_change(
            sql_of(s),
            "UPDATE runs SET forked_from = $1, at_call = CAST($2 AS BIGINT) WHERE id = $3", 3,
            args);
}

static int sql_returned_each(const struct sql_row *r, void *fn, void *userdata)
{
    (void)fn;
    *(int64_t *)userdata = num(r, 0);
    return 0; /* on to the end: the UPDATE is done with it */
}

enum store_rc sql_run_add_recovered(struct store *s, const char *id, int64_t *ret_recovered)
{
    int64_t n = 0;
    enum store_rc rc = sql_walk(s,
                                "UPDATE runs SET recovered = recovered + 1 WHERE id = $1 "
                                "RETURNING recovered",
                                1, &id, 1, sql_returned_each, NULL, &n);
    if (rc == STORE_OK && ret_recovered) {
        *ret_recovered = n;
    }
    return rc;
}

/* ---------------------------------------------------------------- replays (0013_replay) */

enum store_rc sql_replay_put(struct store *s, const struct store_replay *r)
{
    char version[24];
    char against[24];
    char now[32];
    snprintf(version, sizeof version, "%" PRId64, r->version);
    snprintf(against, sizeof against, "%" PRId64, r->against);
    sql_now(now);
    const char *args[] = { r->template_name, version, r->against > 0 ? against : NULL, r->result,
                           now };
    struct sql_store *q = sql_of(s);
    enum store_rc rc = sql_exists(q,
                                  "SELECT 1 FROM versions WHERE template = $1 AND version = "
                                  "CAST($2 AS BIGINT)",
                                  2, args);
    if (rc != STORE_OK) {
        return rc;
    }
    return sql_exec(s,
                    "INSERT INTO version_replays(template, version, against, result, created) "
                    "VALUES ($1, CAST($2 AS BIGINT), CAST($3 AS BIGINT), $4, $5) ON CONFLICT "
                    "(template, version) DO UPDATE SET against = excluded.against, result = "
                    "excluded.result, created = excluded.created",
                    5, args);
}

static int sql_replay_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_replay v = { col(r, 0), num(r, 1), num(r, 2), col(r, 3), col(r, 4) };
    return ((store_replay_fn *)fn)(userdata, &v);
}

enum store_rc sql_replay_get(struct store *s, const char *template_name, int64_t version,
                             store_replay_fn *fn, void *userdata)
{
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, version);
    const char *args[] = { template_name, n };
    return sql_walk(s,
                    "SELECT template, version, COALESCE(against, 0), result, created FROM "
                    "version_replays WHERE template = $1 AND version = CAST($2 AS BIGINT)",
                    2, args, 1, sql_replay_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- workspaces (0015) */

enum store_rc sql_blob_put(struct store *s, const void *bytes, size_t len, char ret_sha256[65])
{
    struct sql_store *q = sql_of(s);
    char hash[65];
    if (sql_sha256_hex(bytes, len, hash) != 0) {
        snprintf(q->errmsg, sizeof q->errmsg, "%s: workspace blob: SHA-256 failed", s->ops->name);
        return STORE_ERROR;
    }
    enum store_rc rc = q->db->blob_insert(q, hash, bytes, len);
    if (rc == STORE_OK) {
        memcpy(ret_sha256, hash, sizeof hash);
    }
    return rc;
}

struct sql_blob_walk {
    store_blob_fn *fn;
    void *userdata;
    enum store_rc rc;
    struct sql_store *q;
};

static int sql_blob_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct sql_blob_walk *w = userdata;
    char hash[65];
    size_t len = 0;
    (void)fn;
    const unsigned char *bytes = r->blob(r, 1, &len);
    const char *stored = col(r, 0);
    if (!bytes || !stored || sql_sha256_hex(bytes, len, hash) != 0 || strcmp(hash, stored) != 0) {
        snprintf(w->q->errmsg, sizeof w->q->errmsg, "%s: workspace blob %.64s %s",
                 w->q->base.ops->name, stored ? stored : "?",
                 bytes ? "does not match its SHA-256" : "cannot be read (out of memory)");
        w->rc = STORE_ERROR;
        return 1;
    }
    w->fn(w->userdata, bytes, len);
    return 1;
}

enum store_rc sql_blob_get(struct store *s, const char *sha256, store_blob_fn *fn, void *userdata)
{
    struct sql_blob_walk w = { fn, userdata, STORE_OK, sql_of(s) };
    enum store_rc rc = sql_walk(s, "SELECT sha256, bytes FROM workspace_blobs WHERE sha256 = $1", 1,
                                &sha256, 1, sql_blob_each, NULL, &w);
    return rc == STORE_OK ? w.rc : rc;
}

enum store_rc sql_snapshot_create(struct store *s, const struct store_snapshot *snap)
{
    char bytes[24];
    snprintf(bytes, sizeof bytes, "%" PRId64, snap->bytes);
    const char *args[] = { snap->id,     snap->principal, snap->department,
                           snap->sha256, bytes,           snap->created };
    return sql_insert(sql_of(s),
                      "INSERT INTO snapshots(id, principal, department, sha256, bytes, created) "
                      "VALUES ($1, $2, $3, $4, CAST($5 AS BIGINT), $6) ON CONFLICT DO NOTHING",
                      6, args);
}

static int sql_snapshot_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_snapshot v = { col(r, 0), col(r, 1), col(r, 2), col(r, 3), num(r, 4), col(r, 5) };
    return ((store_snapshot_fn *)fn)(userdata, &v);
}

enum store_rc sql_snapshot_get(struct store *s, const char *id, store_snapshot_fn *fn,
                               void *userdata)
{
    return sql_walk(s,
                    "SELECT id, principal, department, sha256, bytes, created FROM snapshots "
                    "WHERE id = $1",
                    1, &id, 1, sql_snapshot_each, (void *)fn, userdata);
}

enum store_rc sql_run_workspace_create(struct store *s, const struct store_run_workspace *w)
{
    const char *args[] = { w->run, w->manifest_sha256, w->start_sha256 };
    return sql_insert(sql_of(s),
                      "INSERT INTO run_workspaces(run, manifest_sha256, start_sha256) VALUES ($1, "
                      "$2, $3) ON CONFLICT DO NOTHING",
                      3, args);
}

static int sql_run_workspace_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_run_workspace v = { col(r, 0), col(r, 1), col(r, 2), col(r, 3) };
    return ((store_run_workspace_fn *)fn)(userdata, &v);
}

enum store_rc sql_run_workspace_get(struct store *s, const char *run, store_run_workspace_fn *fn,
                                    void *userdata)
{
    return sql_walk(s,
                    "SELECT run, manifest_sha256, start_sha256, end_sha256 FROM run_workspaces "
                    "WHERE run = $1",
                    1, &run, 1, sql_run_workspace_each, (void *)fn, userdata);
}

enum store_rc sql_run_workspace_end(struct store *s, const char *run, const char *end_sha256,
                                    const struct store_run_file *files, size_t n)
{
    struct sql_store *q = sql_of(s);
    const char *args[] = { end_sha256, run };
    enum store_rc rc =
            sql_change(q, "UPDATE run_workspaces SET end_sha256 = $1 WHERE run = $2", 2, args);
    if (rc == STORE_OK) {
        rc = sql_exec(s, "DELETE FROM run_files WHERE run = $1", 1, &run);
    }
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        char size[24];
        snprintf(size, sizeof size, "%" PRId64, files[i].size);
        const char *fargs[] = { run,         files[i].path, size, files[i].sha256, files[i].mount,
                                files[i].key };
        rc = sql_insert(q,
                        "INSERT INTO run_files(run, path, size, sha256, mount, key) VALUES ($1, "
                        "$2, CAST($3 AS BIGINT), $4, $5, $6) ON CONFLICT DO NOTHING",
                        6, fargs);
    }
    return rc;
}

static int sql_run_file_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_run_file v = { col(r, 0), col(r, 1), num(r, 2), col(r, 3), col(r, 4), col(r, 5) };
    return ((store_run_file_fn *)fn)(userdata, &v);
}

enum store_rc sql_run_file_list(struct store *s, const char *run, const char *path,
                                store_run_file_fn *fn, void *userdata)
{
    const char *args[] = { run, path };
    if (path) {
        return sql_walk(s,
                        "SELECT run, path, size, sha256, mount, key FROM run_files WHERE run = $1 "
                        "AND path = $2",
                        2, args, 1, sql_run_file_each, (void *)fn, userdata);
    }
    return sql_walk(s,
                    "SELECT run, path, size, sha256, mount, key FROM run_files WHERE run = $1 "
                    "ORDER BY path",
                    1, args, 0, sql_run_file_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- sealed values (key rotation) */

/* A name of the schema: what may go into the text of a statement. */
static int sql_is_name(const char *name)
{
    size_t n = 0;
    for (; name && name[n]; n++) {
        if (!((name[n] >= 'a' && name[n] <= 'z') || name[n] == '_')) {
            return 0;
        }
    }
    return n > 0 && n <= 64;
}

/* A statement made of names is kept once per text for the process: a backend keeps prepared
 * statements by the address of their literal (postgres.c), so the same text must have one
 * address. A few texts at most (one pair per sealed column); NULL when out of room or memory. */
static const char *sql_intern(const char *text)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *kept[64];
    const char *found = NULL;
    pthread_mutex_lock(&lock);
    size_t i = 0;
    for (; i < sizeof kept / sizeof kept[0] && kept[i] && !found; i++) {
        found = strcmp(kept[i], text) == 0 ? kept[i] : NULL;
    }
    if (!found && i < sizeof kept / sizeof kept[0]) {
        found = kept[i] = strdup(text);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static int sql_sealed_each(const struct sql_row *r, void *fn, void *userdata)
{
    return ((store_sealed_fn *)fn)(userdata, col(r, 0), col(r, 1));
}

enum store_rc sql_sealed_list(struct store *s, const char *table, const char *key_column,
                              const char *column, store_sealed_fn *fn, void *userdata)
{
    char sql[320];
    if (!sql_is_name(table) || !sql_is_name(key_column) || !sql_is_name(column)) {
        snprintf(sql_of(s)->errmsg, sizeof sql_of(s)->errmsg, "sealed: not a name of the schema");
        return STORE_ERROR;
    }
    snprintf(sql, sizeof sql, "SELECT %s, %s FROM %s WHERE %s IS NOT NULL ORDER BY %s", key_column,
             column, table, column, key_column);
    const char *kept = sql_intern(sql);
    if (!kept) {
        snprintf(sql_of(s)->errmsg, sizeof sql_of(s)->errmsg, "sealed: out of memory");
        return STORE_ERROR;
    }
    return sql_walk(s, kept, 0, NULL, 0, sql_sealed_each, (void *)fn, userdata);
}

enum store_rc sql_sealed_set(struct store *s, const char *table, const char *key_column,
                             const char *key, const char *column, const char *sealed)
{
    char sql[320];
    const char *args[] = { sealed, key };
    if (!sql_is_name(table) || !sql_is_name(key_column) || !sql_is_name(column)) {
        snprintf(sql_of(s)->errmsg, sizeof sql_of(s)->errmsg, "sealed: not a name of the schema");
        return STORE_ERROR;
    }
    snprintf(sql, sizeof sql, "UPDATE %s SET %s = $1 WHERE %s = $2", table, column, key_column);
    const char *kept = sql_intern(sql);
    if (!kept) {
        snprintf(sql_of(s)->errmsg, sizeof sql_of(s)->errmsg, "sealed: out of memory");
        return STORE_ERROR;
    }
    return sql_change(sql_of(s), kept, 2, args);
}

/* ---------------------------------------------------------------- webhooks (0018) */

enum store_rc sql_webhook_create(struct store *s, const struct store_webhook *w)
{
    char now[32];
    sql_now(now);
    const char *args[] = { w->id,     w->url,           w->events, w->department,
                           w->format, w->secret_sealed, now,       w->created_by };
    return sql_insert(sql_of(s),
                      "INSERT INTO webhooks(id, url, events, department, format, secret, created, "
                      "created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
                      8, args);
}

static int sql_webhook_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_webhook w = { col(r, 0), col(r, 1), col(r, 2), col(r, 3),
                               col(r, 4), col(r, 5), col(r, 6), col(r, 7) };
    return ((store_webhook_fn *)fn)(userdata, &w);
}

enum store_rc sql_webhook_list(struct store *s, store_webhook_fn *fn, void *userdata)
{
    return sql_walk(s,
                    "SELECT id, url, events, department, format, secret, created, created_by FROM "
                    "webhooks ORDER BY id",
                    0, NULL, 0, sql_webhook_each, (void *)fn, userdata);
}

enum store_rc sql_webhook_delete(struct store *s, const char *id)
{
    enum store_rc rc = sql_change(sql_of(s), "DELETE FROM webhooks WHERE id = $1", 1, &id);
    if (rc == STORE_OK) {
        rc = sql_exec(s, "DELETE FROM webhook_deliveries WHERE webhook = $1", 1, &id);
    }
    return rc;
}

enum store_rc sql_webhook_enqueue(struct store *s, const char *event_id, const char *type,
                                  const char *department, const char *body, int64_t now_ms)
{
    char now[24];
    char like[96];
    snprintf(now, sizeof now, "%" PRId64, now_ms);
    /* the types are names of a fixed list (webhooks.h): no LIKE wildcard in them */
    snprintf(like, sizeof like, "%%\"%s\"%%", type);
    const char *args[] = { event_id, type, body, now, department, like };
    return sql_exec(s,
                    "INSERT INTO webhook_deliveries(webhook, event, type, body, first_ms, next_ms) "
                    "SELECT id, $1, $2, $3, CAST($4 AS BIGINT), CAST($4 AS BIGINT) FROM webhooks "
                    "WHERE (department = '*' OR department = $5) AND events LIKE $6",
                    6, args);
}

static int sql_int64_each(const struct sql_row *r, void *fn, void *userdata)
{
    (void)fn;
    if (col(r, 0)) {
        *(int64_t *)userdata = num(r, 0);
        return 0;
    }
    return 1; /* NULL: no row to speak of */
}

enum store_rc sql_delivery_next(struct store *s, int64_t *ret_ms)
{
    int64_t at = -1;
    enum store_rc rc = sql_walk(s,
                                "SELECT min(CASE WHEN lease_until_ms > next_ms THEN lease_until_ms "
                                "ELSE next_ms END) FROM webhook_deliveries WHERE status = "
                                "'pending'",
                                0, NULL, 1, sql_int64_each, NULL, &at);
    if (rc == STORE_OK && at < 0) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK) {
        *ret_ms = at;
    }
    return rc;
}

static int sql_delivery_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_webhook w = { col(r, 6),  col(r, 7),  col(r, 8),  col(r, 9),
                               col(r, 10), col(r, 11), col(r, 12), col(r, 13) };
    struct store_delivery d = {
        num(r, 0), col(r, 1), col(r, 2), col(r, 3), num(r, 4), num(r, 5), w
    };
    return ((store_delivery_fn *)fn)(userdata, &d);
}

/* A claim is a conditional UPDATE of the candidate's lease: of two nodes that picked the same
 * delivery, the second's UPDATE finds the lease running (PostgreSQL re-reads the row once the
 * first's lock is gone) and changes nothing. */
enum store_rc sql_delivery_claim(struct store *s, const char *node, int64_t now_ms,
                                 int64_t lease_ms, store_delivery_fn *fn, void *userdata)
{
    struct sql_store *q = sql_of(s);
    char now[24];
    char until[24];
    char seq[24];
    int64_t pick = -1;
    snprintf(now, sizeof now, "%" PRId64, now_ms);
    snprintf(until, sizeof until, "%" PRId64, now_ms + lease_ms);
    enum store_rc rc = sql_walk(s,
                                "SELECT seq FROM webhook_deliveries WHERE status = 'pending' AND "
                                "next_ms <= CAST($1 AS BIGINT) AND lease_until_ms <= CAST($1 AS "
                                "BIGINT) ORDER BY next_ms, seq LIMIT 1",
                                1, (const char *[]){ now }, 1, sql_int64_each, NULL, &pick);
    if (rc != STORE_OK) {
        return rc;
    }
    snprintf(seq, sizeof seq, "%" PRId64, pick);
    const char *args[] = { seq, node, until, now };
    int64_t changes = 0;
    rc = q->db->exec(q,
                     "UPDATE webhook_deliveries SET lease_node = $2, lease_until_ms = CAST($3 AS "
                     "BIGINT), attempts = attempts + 1 WHERE seq = CAST($1 AS BIGINT) AND status "
                     "= 'pending' AND lease_until_ms <= CAST($4 AS BIGINT)",
                     4, args, &changes);
    if (rc == STORE_OK && changes == 0) {
        return STORE_NOT_FOUND;
    }
    if (rc != STORE_OK) {
        return rc;
    }
    return sql_walk(s,
                    "SELECT d.seq, d.event, d.type, d.body, d.attempts, d.first_ms, w.id, w.url, "
                    "w.events, w.department, w.format, w.secret, w.created, w.created_by FROM "
                    "webhook_deliveries d JOIN webhooks w ON w.id = d.webhook WHERE d.seq = "
                    "CAST($1 AS BIGINT)",
                    1, args, 1, sql_delivery_each, (void *)fn, userdata);
}

enum store_rc sql_delivery_settle(struct store *s, int64_t seq, const char *node,
                                  const char *status, int64_t next_ms, const char *error)
{
    char num_seq[24];
    char next[24];
    snprintf(num_seq, sizeof num_seq, "%" PRId64, seq);
    snprintf(next, sizeof next, "%" PRId64, next_ms);
    const char *args[] = { num_seq, node, status, next, error };
    return sql_change(sql_of(s),
                      "UPDATE webhook_deliveries SET status = $3, next_ms = CAST($4 AS BIGINT), "
                      "lease_node = NULL, lease_until_ms = 0, last_error = $5 WHERE seq = CAST($1 "
                      "AS BIGINT) AND lease_node = $2",
                      5, args);
}

/* ---------------------------------------------------------------- sessions (0017_sessions) */

enum store_rc sql_session_create(struct store *s, const struct store_session *sess, int64_t now_ms)
{
    char now[32];
    char expires[24];
    char before[24];
    sql_now(now);
    snprintf(expires, sizeof expires, "%" PRId64, sess->expires_ms);
    snprintf(before, sizeof before, "%" PRId64, now_ms);
    /* the table holds no session long past its end: each sign-in sweeps the expired ones */
    enum store_rc rc = sql_exec(s, "DELETE FROM sessions WHERE expires_ms < $1", 1,
                                (const char *const[]){ before });
    if (rc != STORE_OK) {
        return rc;
    }
    const char *args[] = {
        sess->token_sha256, sess->principal, sess->identity, sess->grants, now, expires
    };
    return sql_insert(sql_of(s),
                      "INSERT INTO sessions(token_sha256, principal, identity, grants, created, "
                      "expires_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                      6, args);
}

static int sql_session_each(const struct sql_row *r, void *fn, void *userdata)
{
    struct store_session sess = {
        col(r, 0), col(r, 1), col(r, 2), col(r, 3), col(r, 4), num(r, 5)
    };
    return ((store_session_fn *)fn)(userdata, &sess);
}

enum store_rc sql_session_get(struct store *s, const char *token_sha256, store_session_fn *fn,
                              void *userdata)
{
    return sql_walk(s,
                    "SELECT token_sha256, principal, identity, grants, created, expires_ms FROM "
                    "sessions WHERE token_sha256 = $1",
                    1, &token_sha256, 1, sql_session_each, (void *)fn, userdata);
}

enum store_rc sql_session_delete(struct store *s, const char *token_sha256)
{
    return sql_change(sql_of(s), "DELETE FROM sessions WHERE token_sha256 = $1", 1, &token_sha256);
}
