/*
 * test_audit.c - unit tests for src/gov/audit.c: the record hash (checked against SHA-256 of
 * the documented input), chain building, checkpoint signatures, and the verifier finding every
 * kind of tampering at the right record: an edited field, a deleted, inserted, duplicated or
 * swapped record, a rewritten tail, truncation, a changed signature, another key; and details
 * made total (a lone surrogate recorded as U+FFFD beside its digest).
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "buf.h"
#include "jcs.h"
#include "json.h"

#define MAX_LINES 32
#define ZERO64    "0000000000000000000000000000000000000000000000000000000000000000"

struct chain {
    char *lines[MAX_LINES];
    char hashes[MAX_LINES][AUDIT_HASH_HEX_LEN + 1]; /* [i] is the hash of lines[i] */
    size_t n;
};

static EVP_PKEY *key_a;
static EVP_PKEY *key_b;

static int setup(void **state)
{
    (void)state;
    key_a = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    key_b = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    return key_a && key_b ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(key_a);
    EVP_PKEY_free(key_b);
    return 0;
}

static void chain_free(struct chain *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->lines[i]);
    }
    c->n = 0;
}

/* The line of a record at seq with the given prev (the chain's, or forced). */
static char *make_line(uint64_t seq, const char *prev, const char *actor, const char *action,
                       const char *subject, const char *department, const char *details,
                       char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    char time[32];
    snprintf(time, sizeof time, "2026-01-31T12:%02u:%02u.%03uZ", (unsigned)(seq / 60 % 60),
             (unsigned)(seq % 60), (unsigned)(seq * 7 % 1000));
    struct audit_record rec = {
        .seq = seq,
        .time = time,
        .actor = actor,
        .action = action,
        .subject = subject,
        .department = department,
        .details = details,
        .prev = prev,
    };
    struct buf line;
    struct al_error err = { 0 };
    buf_init(&line, 1 << 20);
    if (audit_record_write(&rec, &line, ret_hash, &err) != AL_OK) {
        fail_msg("audit_record_write seq %" PRIu64 ": %s", seq, err.message);
    }
    return buf_steal(&line, NULL);
}

static void add(struct chain *c, const char *subject, const char *details)
{
    assert_true(c->n < MAX_LINES);
    const char *prev = c->n ? c->hashes[c->n - 1] : ZERO64;
    c->lines[c->n] = make_line(c->n + 1, prev, "alice", "run.complete", subject,
                               c->n % 2 ? NULL : "finance", details, c->hashes[c->n]);
    c->n++;
}

static void add_checkpoint_of(struct chain *c, EVP_PKEY *key, uint64_t seq, const char *hash)
{
    char sig[AUDIT_SIG_HEX_LEN + 1];
    char pub[AUDIT_KEY_HEX_LEN + 1];
    struct buf details;
    assert_int_equal(audit_checkpoint_sign(key, seq, hash, sig, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key, pub, NULL), AL_OK);
    buf_init(&details, 4096);
    assert_int_equal(audit_checkpoint_details(&details, seq, hash, pub, sig), BUF_OK);
    c->lines[c->n] =
            make_line(c->n + 1, c->hashes[c->n - 1], AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION,
                      "audit", NULL, details.data, c->hashes[c->n]);
    c->n++;
    buf_done(&details);
}

static void add_checkpoint(struct chain *c, EVP_PKEY *key)
{
    add_checkpoint_of(c, key, c->n, c->hashes[c->n - 1]);
}

/* Ten records: 1..4, checkpoint 5 (of 4), 6..9, checkpoint 10 (of 9). */
static void build(struct chain *c, EVP_PKEY *key)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 4; i++) {
        add(c, "orders-v1", "{\"run\":{\"memory_bytes\":1048576,\"ms\":12.5},\"ok\":true}");
    }
    add_checkpoint(c, key);
    for (int i = 0; i < 4; i++) {
        add(c, "orders-v2", "{\"input\":{\"\\u20ac\":1,\"a\":[1e30,0.002,\"x\\ny\"]}}");
    }
    add_checkpoint(c, key);
}

static enum audit_fault verify(const struct chain *c, const char *pinned, unsigned flags,
                               struct audit_problem *ret)
{
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_verifier_new(pinned, flags, &v, NULL), AL_OK);
    memset(ret, 0, sizeof *ret);
    enum audit_fault f = AUDIT_FAULT_NONE;
    for (size_t i = 0; i < c->n && f == AUDIT_FAULT_NONE; i++) {
        f = audit_verifier_line(v, c->lines[i], strlen(c->lines[i]), ret);
    }
    f = audit_verifier_finish(v, ret);
    audit_verifier_free(v);
    return f;
}

static void expect_fault(const struct chain *c, const char *pinned, enum audit_fault want,
                         uint64_t seq, size_t line)
{
    struct audit_problem p;
    enum audit_fault f = verify(c, pinned, 0, &p);
    if (f != want || p.seq != seq || p.line != line) {
        fail_msg("got %s at seq %" PRIu64 " line %zu (%s); want %s at seq %" PRIu64 " line %zu",
                 audit_fault_name(f), p.seq, p.line, p.why, audit_fault_name(want), seq, line);
    }
}

static void replace(char **line, const char *from, const char *to)
{
    char *at = strstr(*line, from);
    assert_non_null(at);
    size_t len = strlen(*line) - strlen(from) + strlen(to);
    char *s = malloc(len + 1);
    assert_non_null(s);
    size_t head = (size_t)(at - *line);
    memcpy(s, *line, head);
    memcpy(s + head, to, strlen(to));
    memcpy(s + head + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
    free(*line);
    *line = s;
}

static void test_audit_hash_is_sha256_of_prev_hex_and_jcs(void **state)
{
    (void)state;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    char *line = make_line(1, ZERO64, "bob", "template.approve", "t1", NULL,
                           "{ \"version\" : 2, \"b\": [ 4.50 ] }", hash);
    /* Canonical: sorted members, no spaces, 4.5, and the hash member in its place. */
    char want[1024];
    snprintf(want, sizeof want,
             "{\"action\":\"template.approve\",\"actor\":\"bob\",\"department\":null,"
             "\"details\":{\"b\":[4.5],\"version\":2},\"hash\":\"%s\",\"prev\":\"%s\",\"seq\":1,"
             "\"subject\":\"t1\",\"time\":\"2026-01-31T12:00:01.007Z\"}",
             hash, ZERO64);
    assert_string_equal(line, want);
    /* hash = SHA-256("000...0" (64 ASCII) || JCS(record without hash)). */
    char input[1024];
    int n = snprintf(input, sizeof input,
                     "%s{\"action\":\"template.approve\",\"actor\":\"bob\",\"department\":null,"
                     "\"details\":{\"b\":[4.5],\"version\":2},\"prev\":\"%s\",\"seq\":1,"
                     "\"subject\":\"t1\",\"time\":\"2026-01-31T12:00:01.007Z\"}",
                     ZERO64, ZERO64);
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)input, (size_t)n, md);
    char hex[65];
    for (int i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    assert_string_equal(hash, hex);
    free(line);
}

/* The line is the canonical record with its hash in its place, also when details hold members
 * named prev and hash at any depth and the strings after them look like members. */
static void test_audit_line_is_canonical_whatever_the_details(void **state)
{
    (void)state;
    static const char *const details[] = {
        "{\"prev\":\"x\",\"z\":{\"prev\":1,\"hash\":[\",\\\"prev\\\":\"]}}",
        "{\"a\":\"\\u00e9\\u2028\",\"prev\":{\"prev\":{\"prev\":null}}}",
        "{}",
    };
    static const char *const subjects[] = { "\",\"prev\":\"", "s", "\\\",\\\"prev\\\":" };
    for (size_t i = 0; i < sizeof details / sizeof details[0]; i++) {
        for (size_t j = 0; j < sizeof subjects / sizeof subjects[0]; j++) {
            char hash[AUDIT_HASH_HEX_LEN + 1];
            char *line = make_line(7, ZERO64, "eve", "x.y", subjects[j], j ? "d" : NULL, details[i],
                                   hash);
            struct json_doc *doc = NULL;
            struct buf canon;
            buf_init(&canon, 1 << 16);
            assert_int_equal(json_parse(line, strlen(line), 64, &doc, NULL), AL_OK);
            assert_int_equal(jcs_write(&canon, json_root(doc), NULL, NULL), AL_OK);
            assert_string_equal(canon.data, line);
            const struct json_node *h = json_get(json_root(doc), "hash");
            const struct json_node *p = json_get(json_root(doc), "prev");
            assert_non_null(h);
            assert_non_null(p);
            assert_int_equal(h->type, JSON_STRING);
            assert_string_equal(h->str, hash);
            assert_string_equal(p->str, ZERO64);
            json_doc_free(doc);
            buf_done(&canon);
            free(line);
        }
    }
}

static void test_audit_record_write_refuses_bad_fields(void **state)
{
    (void)state;
    struct buf line;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    buf_init(&line, 1 << 16);
    struct audit_record ok = { 1, "2026-01-31T12:00:00.000Z", "a", "x.y", "s", NULL, NULL, ZERO64 };
    assert_int_equal(audit_record_write(&ok, &line, hash, NULL), AL_OK);
    struct audit_record r = ok;
    r.seq = 0;
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.time = "2026-01-31T12:00:00Z";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.details = "[1]";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.details = "{\"a\":1,\"a\":2}";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.details = "{},\"extra\":1";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.details = " {\"a\":[1]} ";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_OK);
    r = ok;
    r.prev = "00";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    r = ok;
    r.actor = "";
    assert_int_equal(audit_record_write(&r, &line, hash, NULL), AL_CONFIG_ERROR);
    buf_done(&line);
}

/* "NAME_sha256":"HEX" of SHA-256(text), into out. */
static void digest_member(char *out, size_t size, const char *name, const char *text)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)text, strlen(text), md);
    int n = snprintf(out, size, "\"%s_sha256\":\"", name);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        n += snprintf(out + n, size - (size_t)n, "%02x", md[i]);
    }
    snprintf(out + n, size - (size_t)n, "\"");
}

/* audit_details_total of `details`: its text, NULL when nothing changed. */
static char *total_of(const char *details)
{
    struct buf total;
    int changed = -1;
    buf_init(&total, 1 << 16);
    assert_int_equal(audit_details_total(details, strlen(details), &total, &changed, NULL), AL_OK);
    assert_int_equal(changed, total.data != NULL);
    return buf_steal(&total, NULL);
}

/* A member holding a lone surrogate (a cut emoji, a garbled connector answer) is recorded with
 * U+FFFD, beside the SHA-256 of its compact text as it was; every other member stays byte for
 * byte, and the result is a record audit_record_write takes. */
static void test_audit_details_total_replaces_lone_surrogates_beside_their_digest(void **state)
{
    (void)state;
    char want[1024];
    char value_digest[128];
    char args_digest[128];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    struct buf line;
    buf_init(&line, 1 << 16);

    /* I-JSON already: nothing to do */
    assert_null(total_of("{\"a\":\"fine \\ud83d\\ude00\",\"b\":[1,{\"c\":null}]}"));

    const char *details = "{\"run\":\"r1\", \"value\" : { \"note\" : \"abcd\\ud83d\", \"n\" : 1 },"
                          "\"args\":[\"x\\udc00y\"],\"ok\":\"fine \\ud83d\\ude00\"}";
    struct audit_record rec = {
        1, "2026-01-31T12:00:00.000Z", "airlockd", "run.end", "r1", NULL, details, ZERO64,
    };
    assert_int_equal(audit_record_write(&rec, &line, hash, NULL), AL_CONFIG_ERROR);
    char *total = total_of(details);
    digest_member(value_digest, sizeof value_digest, "value", "{\"note\":\"abcd\\ud83d\",\"n\":1}");
    digest_member(args_digest, sizeof args_digest, "args", "[\"x\\udc00y\"]");
    snprintf(want, sizeof want,
             "{\"run\":\"r1\",\"value\":{\"note\":\"abcd\xef\xbf\xbd\",\"n\":1},%s,"
             "\"args\":[\"x\xef\xbf\xbdy\"],%s,\"ok\":\"fine \\ud83d\\ude00\"}",
             value_digest, args_digest);
    assert_string_equal(total, want);
    rec.details = total;
    buf_reset(&line);
    assert_int_equal(audit_record_write(&rec, &line, hash, NULL), AL_OK);
    free(total);

    /* names that become one name once replaced: only the digest is kept */
    total = total_of("{\"value\":{\"\\ud800\":1,\"\\udbff\":2}}");
    digest_member(value_digest, sizeof value_digest, "value", "{\"\\ud800\":1,\"\\udbff\":2}");
    snprintf(want, sizeof want, "{\"value\":null,%s}", value_digest);
    assert_string_equal(total, want);
    free(total);

    /* a member name of its own */
    total = total_of("{\"\\udfff\":\"x\"}");
    digest_member(value_digest, sizeof value_digest, "\xef\xbf\xbd", "\"x\"");
    snprintf(want, sizeof want, "{\"\xef\xbf\xbd\":\"x\",%s}", value_digest);
    assert_string_equal(total, want);
    free(total);

    struct buf b;
    int changed = 0;
    buf_init(&b, 1 << 16);
    assert_int_equal(audit_details_total("[\"\\ud800\"]", 10, &b, &changed, NULL), AL_CONFIG_ERROR);
    assert_int_equal(audit_details_total("{\"a\":", 5, &b, &changed, NULL), AL_CONFIG_ERROR);
    assert_null(b.data);
    buf_done(&b);
    buf_done(&line);
}

static void test_audit_checkpoint_sign_verify(void **state)
{
    (void)state;
    char sig[AUDIT_SIG_HEX_LEN + 1];
    char pub[AUDIT_KEY_HEX_LEN + 1];
    char other[AUDIT_KEY_HEX_LEN + 1];
    const char *h = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
    int valid = -1;
    assert_int_equal(audit_checkpoint_sign(key_a, 7, h, sig, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key_a, pub, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key_b, other, NULL), AL_OK);
    assert_int_equal(audit_checkpoint_verify(pub, 7, h, sig, &valid, NULL), AL_OK);
    assert_int_equal(valid, 1);
    assert_int_equal(audit_checkpoint_verify(pub, 8, h, sig, &valid, NULL), AL_OK);
    assert_int_equal(valid, 0);
    assert_int_equal(audit_checkpoint_verify(other, 7, h, sig, &valid, NULL), AL_OK);
    assert_int_equal(valid, 0);
    sig[5] = sig[5] == '0' ? '1' : '0';
    assert_int_equal(audit_checkpoint_verify(pub, 7, h, sig, &valid, NULL), AL_OK);
    assert_int_equal(valid, 0);
    assert_int_equal(audit_checkpoint_verify(pub, 7, h, "abc", &valid, NULL), AL_CONFIG_ERROR);
    /* The signed text is exactly the documented one. */
    assert_int_equal(audit_checkpoint_sign(key_a, 7, h, sig, NULL), AL_OK);
    char msg[200];
    int n = snprintf(msg, sizeof msg, "airlock-audit-checkpoint\n7\n%s\n", h);
    unsigned char raw[64];
    for (int i = 0; i < 64; i++) {
        unsigned int byte;
        assert_int_equal(sscanf(sig + 2 * i, "%2x", &byte), 1);
        raw[i] = (unsigned char)byte;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key_a), 1);
    assert_int_equal(EVP_DigestVerify(ctx, raw, 64, (const unsigned char *)msg, (size_t)n), 1);
    EVP_MD_CTX_free(ctx);
}

static void test_audit_chain_verifies(void **state)
{
    (void)state;
    struct chain c;
    struct audit_problem p;
    build(&c, key_a);
    assert_int_equal(verify(&c, NULL, 0, &p), AUDIT_FAULT_NONE);
    char pub[AUDIT_KEY_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub, NULL), AL_OK);
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_verifier_new(pub, 0, &v, NULL), AL_OK);
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(audit_verifier_line(v, c.lines[i], strlen(c.lines[i]), &p),
                         AUDIT_FAULT_NONE);
    }
    assert_int_equal(audit_verifier_finish(v, &p), AUDIT_FAULT_NONE);
    struct audit_summary s;
    audit_verifier_summary(v, &s);
    assert_int_equal(s.records, 10);
    assert_int_equal(s.checkpoints, 2);
    assert_int_equal(s.sealed_seq, 9);
    assert_int_equal(s.key_pinned, 1);
    assert_string_equal(s.key, pub);
    assert_string_equal(s.last_hash, c.hashes[9]);
    audit_verifier_free(v);
    chain_free(&c);
}

static void test_audit_detects_edited_field(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    replace(&c.lines[2], "orders-v1", "orders-v9");
    expect_fault(&c, NULL, AUDIT_FAULT_HASH, 3, 3);
    chain_free(&c);
    /* Details, numbers and department count too. */
    build(&c, key_a);
    replace(&c.lines[6], "1e+30", "1e+31");
    expect_fault(&c, NULL, AUDIT_FAULT_HASH, 7, 7);
    chain_free(&c);
    build(&c, key_a);
    replace(&c.lines[0], "\"finance\"", "null");
    expect_fault(&c, NULL, AUDIT_FAULT_HASH, 1, 1);
    chain_free(&c);
    /* Reformatting alone is no edit: the hash covers the canonical form. */
    build(&c, key_a);
    replace(&c.lines[6], "1e+30", "1.0E30");
    replace(&c.lines[6], "{", "{ ");
    struct audit_problem p;
    assert_int_equal(verify(&c, NULL, 0, &p), AUDIT_FAULT_NONE);
    chain_free(&c);
}

static void test_audit_detects_edit_with_rehash(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    char hash[AUDIT_HASH_HEX_LEN + 1];
    free(c.lines[2]);
    c.lines[2] = make_line(3, c.hashes[1], "mallory", "run.complete", "orders-v1", "finance", NULL,
                           hash);
    expect_fault(&c, NULL, AUDIT_FAULT_PREV, 4, 4);
    chain_free(&c);
}

static void drop(struct chain *c, size_t i)
{
    free(c->lines[i]);
    memmove(&c->lines[i], &c->lines[i + 1], (c->n - i - 1) * sizeof c->lines[0]);
    memmove(&c->hashes[i], &c->hashes[i + 1], (c->n - i - 1) * sizeof c->hashes[0]);
    c->n--;
}

static void insert(struct chain *c, size_t i, char *line)
{
    memmove(&c->lines[i + 1], &c->lines[i], (c->n - i) * sizeof c->lines[0]);
    c->lines[i] = line;
    c->n++;
}

static void test_audit_detects_deleted_record(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    drop(&c, 2);
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 4, 3);
    chain_free(&c);
    build(&c, key_a);
    drop(&c, 0);
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 2, 1);
    chain_free(&c);
}

static void test_audit_detects_inserted_record(void **state)
{
    (void)state;
    struct chain c;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    /* A well-formed record 4 linked to record 3 ahead of the real record 4. */
    build(&c, key_a);
    insert(&c, 3, make_line(4, c.hashes[2], "mallory", "template.approve", "t", NULL, NULL, hash));
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 4, 5);
    chain_free(&c);
    /* A copy of a record. */
    build(&c, key_a);
    insert(&c, 3, strdup(c.lines[2]));
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 3, 4);
    chain_free(&c);
}

/* Insert a record and renumber and rehash everything after it: only the checkpoint shows. */
static void test_audit_detects_rewritten_tail(void **state)
{
    (void)state;
    struct chain c;
    struct chain forged;
    build(&c, key_a);
    memset(&forged, 0, sizeof forged);
    for (int i = 0; i < 2; i++) {
        add(&forged, "orders-v1", "{\"run\":{\"memory_bytes\":1048576,\"ms\":12.5},\"ok\":true}");
    }
    add(&forged, "forged", NULL);
    for (int i = 0; i < 2; i++) {
        add(&forged, "orders-v1", "{\"run\":{\"memory_bytes\":1048576,\"ms\":12.5},\"ok\":true}");
    }
    /* The genuine checkpoint of seq 4, now followed by the forged seq 5. */
    add_checkpoint_of(&forged, key_a, 4, c.hashes[3]);
    expect_fault(&forged, NULL, AUDIT_FAULT_CHECKPOINT, 6, 6);
    chain_free(&forged);
    chain_free(&c);
}

static void test_audit_detects_swapped_records(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    char *t = c.lines[6];
    c.lines[6] = c.lines[7];
    c.lines[7] = t;
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 8, 7);
    chain_free(&c);
    /* Moved back: seq out of order. */
    build(&c, key_a);
    char *moved = c.lines[1];
    memmove(&c.lines[1], &c.lines[2], 3 * sizeof c.lines[0]);
    c.lines[4] = moved;
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 3, 2);
    chain_free(&c);
    build(&c, key_a);
    moved = c.lines[5];
    c.lines[5] = c.lines[3];
    c.lines[3] = moved;
    /* line 4 now holds seq 6: a gap at seq 6. */
    expect_fault(&c, NULL, AUDIT_FAULT_SEQ, 6, 4);
    chain_free(&c);
}

static void test_audit_detects_truncation(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    drop(&c, 9);
    expect_fault(&c, NULL, AUDIT_FAULT_UNSEALED, 9, 9);
    struct audit_problem p;
    assert_int_equal(verify(&c, NULL, AUDIT_ALLOW_UNSEALED, &p), AUDIT_FAULT_NONE);
    drop(&c, 8);
    drop(&c, 7);
    expect_fault(&c, NULL, AUDIT_FAULT_UNSEALED, 7, 7);
    chain_free(&c);
    /* Cut inside the last line. */
    build(&c, key_a);
    c.lines[9][strlen(c.lines[9]) / 2] = '\0';
    expect_fault(&c, NULL, AUDIT_FAULT_MALFORMED, 0, 10);
    chain_free(&c);
    /* Nothing left. */
    build(&c, key_a);
    chain_free(&c);
    expect_fault(&c, NULL, AUDIT_FAULT_EMPTY, 0, 0);
}

/* A kept checkpoint (GET /v1/audit/checkpoint's fields) of c's seq `seq`, signed with `key`. */
static enum audit_fault verify_kept(const struct chain *c, const char *pinned, EVP_PKEY *key,
                                    uint64_t seq, const char *hash, struct audit_problem *ret)
{
    char sig[AUDIT_SIG_HEX_LEN + 1];
    char pub[AUDIT_KEY_HEX_LEN + 1];
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_checkpoint_sign(key, seq, hash, sig, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key, pub, NULL), AL_OK);
    assert_int_equal(audit_verifier_new(pinned, 0, &v, NULL), AL_OK);
    assert_int_equal(audit_verifier_expect(v, seq, hash, pub, sig, NULL), AL_OK);
    memset(ret, 0, sizeof *ret);
    for (size_t i = 0; i < c->n; i++) {
        audit_verifier_line(v, c->lines[i], strlen(c->lines[i]), ret);
    }
    enum audit_fault f = audit_verifier_finish(v, ret);
    struct audit_summary sum;
    audit_verifier_summary(v, &sum);
    assert_int_equal(sum.kept_seq, seq);
    audit_verifier_free(v);
    return f;
}

/* An export cut at an earlier checkpoint (its own seal included) verifies on its own, pinned key
 * and all; the checkpoint the auditor kept is what shows the cut. */
static void test_audit_kept_checkpoint_finds_a_cut_at_a_checkpoint(void **state)
{
    (void)state;
    struct chain c;
    struct audit_problem p;
    char pub[AUDIT_KEY_HEX_LEN + 1];
    char kept[AUDIT_HASH_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub, NULL), AL_OK);
    build(&c, key_a);
    memcpy(kept, c.hashes[8], sizeof kept);
    assert_int_equal(verify_kept(&c, pub, key_a, 9, kept, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify_kept(&c, NULL, key_a, 9, kept, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify_kept(&c, pub, key_a, 4, c.hashes[3], &p), AUDIT_FAULT_NONE);
    for (int i = 9; i >= 5; i--) {
        drop(&c, (size_t)i); /* back to records 1..5: sealed by the checkpoint of seq 4 */
    }
    assert_int_equal(verify(&c, pub, 0, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify_kept(&c, pub, key_a, 9, kept, &p), AUDIT_FAULT_TRUNCATED);
    assert_int_equal(p.seq, 9);
    assert_non_null(strstr(p.why, "ends at seq 5"));
    chain_free(&c);
    /* The checkpoint's record rewritten (and everything re-chained and re-sealed after it). */
    build(&c, key_a);
    struct chain forged;
    memset(&forged, 0, sizeof forged);
    for (int i = 0; i < 8; i++) {
        add(&forged, "orders-v1", "{\"ok\":true}");
    }
    add(&forged, "forged", NULL);
    add_checkpoint(&forged, key_a);
    assert_int_equal(verify(&forged, pub, 0, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify_kept(&forged, pub, key_a, 9, kept, &p), AUDIT_FAULT_CHECKPOINT);
    /* A kept checkpoint of another key: not the pinned key, nor the export's. */
    assert_int_equal(verify_kept(&c, pub, key_b, 9, kept, &p), AUDIT_FAULT_KEY);
    assert_int_equal(verify_kept(&c, NULL, key_b, 9, kept, &p), AUDIT_FAULT_KEY);
    chain_free(&forged);
    chain_free(&c);
    /* A forged signature, and fields out of format. */
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_verifier_new(NULL, 0, &v, NULL), AL_OK);
    char sig[AUDIT_SIG_HEX_LEN + 1];
    memset(sig, 'a', AUDIT_SIG_HEX_LEN);
    sig[AUDIT_SIG_HEX_LEN] = '\0';
    assert_int_equal(audit_verifier_expect(v, 0, kept, pub, sig, NULL), AL_CONFIG_ERROR);
    assert_int_equal(audit_verifier_expect(v, 9, "00", pub, sig, NULL), AL_CONFIG_ERROR);
    assert_int_equal(audit_verifier_expect(v, 9, kept, pub, sig, NULL), AL_OK);
    build(&c, key_a);
    for (size_t i = 0; i < c.n; i++) {
        audit_verifier_line(v, c.lines[i], strlen(c.lines[i]), &p);
    }
    assert_int_equal(audit_verifier_finish(v, &p), AUDIT_FAULT_SIGNATURE);
    audit_verifier_free(v);
    chain_free(&c);
}

static void test_audit_detects_changed_signature(void **state)
{
    (void)state;
    struct chain c;
    build(&c, key_a);
    /* Flip a signature digit: the record's own hash shows it first. */
    char *sig = strstr(c.lines[4], "\"signature\":\"") + 13;
    sig[10] = sig[10] == 'a' ? 'b' : 'a';
    expect_fault(&c, NULL, AUDIT_FAULT_HASH, 5, 5);
    chain_free(&c);
    /* Rehash the record too: the signature check catches it (and the chain after it). */
    build(&c, key_a);
    for (int i = 0; i < 6; i++) {
        drop(&c, c.n - 1);
    }
    char pub[AUDIT_KEY_HEX_LEN + 1];
    char good[AUDIT_SIG_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub, NULL), AL_OK);
    assert_int_equal(audit_checkpoint_sign(key_a, 4, c.hashes[3], good, NULL), AL_OK);
    good[0] = good[0] == 'a' ? 'b' : 'a';
    struct buf d;
    buf_init(&d, 4096);
    assert_int_equal(audit_checkpoint_details(&d, 4, c.hashes[3], pub, good), BUF_OK);
    c.lines[4] = make_line(5, c.hashes[3], "airlockd", AUDIT_CHECKPOINT_ACTION, "audit", NULL,
                           d.data, c.hashes[4]);
    c.n = 5;
    expect_fault(&c, NULL, AUDIT_FAULT_SIGNATURE, 5, 5);
    buf_done(&d);
    chain_free(&c);
    /* A valid signature over a hash that is not the record's. */
    build(&c, key_a);
    for (int i = 0; i < 6; i++) {
        drop(&c, c.n - 1);
    }
    add_checkpoint_of(&c, key_a, 4, c.hashes[2]);
    expect_fault(&c, NULL, AUDIT_FAULT_CHECKPOINT, 5, 5);
    chain_free(&c);
}

static void test_audit_detects_other_key(void **state)
{
    (void)state;
    struct chain c;
    char pub_a[AUDIT_KEY_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub_a, NULL), AL_OK);
    /* Re-signed with key B: consistent on its own, refused when A is pinned. */
    build(&c, key_b);
    struct audit_problem p;
    assert_int_equal(verify(&c, NULL, 0, &p), AUDIT_FAULT_NONE);
    expect_fault(&c, pub_a, AUDIT_FAULT_KEY, 5, 5);
    chain_free(&c);
    /* Two keys in one export, nothing pinned: the second is refused. */
    build(&c, key_a);
    drop(&c, 9);
    add_checkpoint(&c, key_b);
    expect_fault(&c, NULL, AUDIT_FAULT_KEY, 10, 10);
    expect_fault(&c, pub_a, AUDIT_FAULT_KEY, 10, 10);
    chain_free(&c);
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_verifier_new("ABCD", 0, &v, NULL), AL_CONFIG_ERROR);
    assert_null(v);
}

static void test_audit_detects_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *from;
        const char *to;
    } edits[] = {
        { "\"seq\":3", "\"seq\":3.0" },
        { "\"seq\":3", "\"seq\":\"3\"" },
        { "\"actor\":\"alice\"", "\"actor\":\"alice\",\"extra\":1" },
        { "\"actor\":\"alice\",", "" },
        { "\"department\":\"finance\"", "\"department\":7" },
        { ".021Z", "Z" },
        { "{", "[{" },
        { "\"details\":{", "\"details\":{\"a\":1,\"a\":2," },
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        struct chain c;
        build(&c, key_a);
        replace(&c.lines[2], edits[i].from, edits[i].to);
        struct audit_problem p;
        enum audit_fault f = verify(&c, NULL, 0, &p);
        if (f != AUDIT_FAULT_MALFORMED || p.line != 3) {
            fail_msg("edit %zu: %s at line %zu (%s)", i, audit_fault_name(f), p.line, p.why);
        }
        chain_free(&c);
    }
}

/* The checkpoint airlockd keeps outside the log against the log as stored. */
static void test_audit_kept_compare_finds_a_cut_tail(void **state)
{
    char kept[AUDIT_HASH_HEX_LEN + 1];
    char other[AUDIT_HASH_HEX_LEN + 1];
    struct audit_problem p;
    (void)state;
    memset(kept, 'a', AUDIT_HASH_HEX_LEN);
    kept[AUDIT_HASH_HEX_LEN] = '\0';
    memset(other, 'b', AUDIT_HASH_HEX_LEN);
    other[AUDIT_HASH_HEX_LEN] = '\0';
    memset(&p, 0, sizeof p);
    /* the log reaches it with that record, or has grown past it */
    assert_int_equal(audit_kept_compare(8, kept, 8, kept, &p), AUDIT_FAULT_NONE);
    assert_int_equal(audit_kept_compare(8, kept, 12, kept, &p), AUDIT_FAULT_NONE);
    /* its tail deleted: the first record missing is the fault */
    assert_int_equal(audit_kept_compare(8, kept, 5, NULL, &p), AUDIT_FAULT_TRUNCATED);
    assert_int_equal(p.seq, 6);
    assert_non_null(strstr(p.why, "seq 8"));
    assert_non_null(strstr(p.why, kept));
    assert_int_equal(audit_kept_compare(8, kept, 0, NULL, &p), AUDIT_FAULT_TRUNCATED);
    assert_int_equal(p.seq, 1);
    /* cut and written again past it: the record at its seq is another */
    assert_int_equal(audit_kept_compare(8, kept, 9, other, &p), AUDIT_FAULT_TRUNCATED);
    assert_int_equal(p.seq, 8);
    assert_non_null(strstr(p.why, "written again"));
    assert_int_equal(audit_kept_compare(8, kept, 9, NULL, NULL), AUDIT_FAULT_TRUNCATED);
}

/* A checkpoint of the last record that announces `next`, signed with `signer` but naming
 * `named` as its key (the same key, unless a test forges it). */
static void add_announcement(struct chain *c, EVP_PKEY *signer, EVP_PKEY *named, EVP_PKEY *next)
{
    char sig[AUDIT_SIG_HEX_LEN + 1];
    char pub[AUDIT_KEY_HEX_LEN + 1];
    char next_pub[AUDIT_KEY_HEX_LEN + 1];
    struct buf details;
    uint64_t seq = c->n;
    assert_int_equal(audit_public_key_hex(named, pub, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(next, next_pub, NULL), AL_OK);
    assert_int_equal(audit_announce_sign(signer, seq, c->hashes[c->n - 1], next_pub, sig, NULL),
                     AL_OK);
    buf_init(&details, 4096);
    assert_int_equal(audit_announce_details(&details, seq, c->hashes[c->n - 1], pub, sig, next_pub),
                     BUF_OK);
    c->lines[c->n] =
            make_line(c->n + 1, c->hashes[c->n - 1], AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION,
                      "audit", NULL, details.data, c->hashes[c->n]);
    c->n++;
    buf_done(&details);
}

/* 1..4, checkpoint 5 (A), 6..9, announcement 10 (A names B), checkpoint 11 (B), 12..13,
 * checkpoint 14 (B): airlockd's log across `airlockd keys rotate audit`. */
static void build_rotated(struct chain *c, EVP_PKEY *signer)
{
    build(c, key_a);
    drop(c, 9);
    add_announcement(c, signer, key_a, key_b);
    add_checkpoint(c, key_b);
    add(c, "orders-v3", "{}");
    add(c, "orders-v3", "{}");
    add_checkpoint(c, key_b);
}

static void test_audit_follows_the_chain_of_keys(void **state)
{
    (void)state;
    struct chain c;
    struct audit_problem p;
    struct audit_summary sum;
    char pub_a[AUDIT_KEY_HEX_LEN + 1];
    char pub_b[AUDIT_KEY_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub_a, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key_b, pub_b, NULL), AL_OK);
    build_rotated(&c, key_a);
    assert_int_equal(verify(&c, pub_a, 0, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify(&c, NULL, 0, &p), AUDIT_FAULT_NONE);
    /* airlockd pins its own key, the last one: trusted through B's checkpoints, which cover
     * every record before them, A's announcement of B included */
    assert_int_equal(verify(&c, pub_b, AUDIT_PIN_IN_CHAIN, &p), AUDIT_FAULT_NONE);
    assert_int_equal(verify(&c, pub_a, AUDIT_PIN_IN_CHAIN, &p), AUDIT_FAULT_NONE);
    /* without AUDIT_PIN_IN_CHAIN the pinned key is where the chain starts */
    expect_fault(&c, pub_b, AUDIT_FAULT_KEY, 5, 5);
    struct audit_verifier *v = NULL;
    assert_int_equal(audit_verifier_new(pub_a, 0, &v, NULL), AL_OK);
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(audit_verifier_line(v, c.lines[i], strlen(c.lines[i]), &p),
                         AUDIT_FAULT_NONE);
    }
    assert_int_equal(audit_verifier_finish(v, &p), AUDIT_FAULT_NONE);
    audit_verifier_summary(v, &sum);
    assert_int_equal(sum.keys, 2);
    assert_string_equal(sum.key, pub_b);
    audit_verifier_free(v);
    chain_free(&c);
}

static void test_audit_announcement_not_signed_by_the_previous_key(void **state)
{
    (void)state;
    struct chain c;
    struct audit_problem p;
    char pub_a[AUDIT_KEY_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub_a, NULL), AL_OK);
    /* B announces itself in A's name: the signature is not A's */
    build_rotated(&c, key_b);
    expect_fault(&c, pub_a, AUDIT_FAULT_SIGNATURE, 10, 10);
    expect_fault(&c, NULL, AUDIT_FAULT_SIGNATURE, 10, 10);
    chain_free(&c);
    /* B announces itself in its own name: B is not the key the chain is at */
    build(&c, key_a);
    drop(&c, 9);
    add_announcement(&c, key_b, key_b, key_a);
    expect_fault(&c, pub_a, AUDIT_FAULT_KEY, 10, 10);
    chain_free(&c);
    /* A checkpoint's signature is no announcement's: A's signature of seq 9 as a checkpoint,
     * with B named next */
    build(&c, key_a);
    drop(&c, 9);
    char sig[AUDIT_SIG_HEX_LEN + 1];
    char next[AUDIT_KEY_HEX_LEN + 1];
    struct buf details;
    assert_int_equal(audit_public_key_hex(key_b, next, NULL), AL_OK);
    assert_int_equal(audit_checkpoint_sign(key_a, 9, c.hashes[8], sig, NULL), AL_OK);
    buf_init(&details, 4096);
    assert_int_equal(audit_announce_details(&details, 9, c.hashes[8], pub_a, sig, next), BUF_OK);
    c.lines[9] = make_line(10, c.hashes[8], AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION, "audit",
                           NULL, details.data, c.hashes[9]);
    c.n = 10;
    buf_done(&details);
    expect_fault(&c, pub_a, AUDIT_FAULT_SIGNATURE, 10, 10);
    (void)p;
    chain_free(&c);
}

static void test_audit_record_signed_by_an_unannounced_key(void **state)
{
    (void)state;
    struct chain c;
    struct audit_problem p;
    char pub_a[AUDIT_KEY_HEX_LEN + 1];
    char pub_b[AUDIT_KEY_HEX_LEN + 1];
    assert_int_equal(audit_public_key_hex(key_a, pub_a, NULL), AL_OK);
    assert_int_equal(audit_public_key_hex(key_b, pub_b, NULL), AL_OK);
    /* after A announced B, A signs no more */
    build(&c, key_a);
    drop(&c, 9);
    add_announcement(&c, key_a, key_a, key_b);
    add_checkpoint(&c, key_a);
    expect_fault(&c, pub_a, AUDIT_FAULT_KEY, 11, 11);
    chain_free(&c);
    /* B signs with nothing announcing it: pinned to B in the chain, the log's A checkpoints
     * lead nowhere near B */
    build(&c, key_a);
    drop(&c, 9);
    add_checkpoint(&c, key_b);
    expect_fault(&c, pub_a, AUDIT_FAULT_KEY, 10, 10);
    assert_int_equal(verify(&c, pub_b, AUDIT_PIN_IN_CHAIN, &p), AUDIT_FAULT_KEY);
    chain_free(&c);
    /* pinned in the chain, the pinned key must sign a checkpoint: A's announcement of B alone
     * (B never signed) does not vouch for anything B would */
    build(&c, key_a);
    drop(&c, 9);
    add_announcement(&c, key_a, key_a, key_b);
    assert_int_equal(verify(&c, pub_b, AUDIT_PIN_IN_CHAIN, &p), AUDIT_FAULT_KEY);
    assert_non_null(strstr(p.why, "no checkpoint is signed with the pinned key"));
    chain_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_hash_is_sha256_of_prev_hex_and_jcs),
        cmocka_unit_test(test_audit_line_is_canonical_whatever_the_details),
        cmocka_unit_test(test_audit_record_write_refuses_bad_fields),
        cmocka_unit_test(test_audit_details_total_replaces_lone_surrogates_beside_their_digest),
        cmocka_unit_test(test_audit_checkpoint_sign_verify),
        cmocka_unit_test(test_audit_chain_verifies),
        cmocka_unit_test(test_audit_detects_edited_field),
        cmocka_unit_test(test_audit_detects_edit_with_rehash),
        cmocka_unit_test(test_audit_detects_deleted_record),
        cmocka_unit_test(test_audit_detects_inserted_record),
        cmocka_unit_test(test_audit_detects_rewritten_tail),
        cmocka_unit_test(test_audit_detects_swapped_records),
        cmocka_unit_test(test_audit_detects_truncation),
        cmocka_unit_test(test_audit_kept_compare_finds_a_cut_tail),
        cmocka_unit_test(test_audit_kept_checkpoint_finds_a_cut_at_a_checkpoint),
        cmocka_unit_test(test_audit_detects_changed_signature),
        cmocka_unit_test(test_audit_detects_other_key),
        cmocka_unit_test(test_audit_detects_malformed),
        cmocka_unit_test(test_audit_follows_the_chain_of_keys),
        cmocka_unit_test(test_audit_announcement_not_signed_by_the_previous_key),
        cmocka_unit_test(test_audit_record_signed_by_an_unannounced_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
