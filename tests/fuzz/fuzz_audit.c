/*
 * fuzz_audit.c - fuzz target for the audit export verifier and RFC 8785 canonicalization
 * (src/gov/audit.c, src/gov/jcs.c).
 *
 * Claims, for any bytes:
 *   - the verifier takes the input as an export, line by line, and gives a verdict without
 *     crashing, leaking or reading past a line; a fault, once given, is given again;
 *   - when the whole input is JSON with a canonical form, that form is JSON again and its
 *     canonical form is itself (JCS is idempotent), and it is never longer than 6x the input
 *     plus a number's worst case per number.
 * Built as fuzz_replay_audit (CTest fuzz.replay.audit) and, with clang, as a libFuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "buf.h"
#include "jcs.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_audit: %s\n", what);
    abort();
}

static void check_jcs(const char *text, size_t size)
{
    struct json_doc *doc = NULL;
    struct json_doc *again = NULL;
    struct buf once;
    struct buf twice;
    buf_init(&once, 64u << 20);
    buf_init(&twice, 64u << 20);
    if (json_parse(text, size, 64, &doc, NULL) != AL_OK) {
        goto out;
    }
    if (jcs_write(&once, json_root(doc), NULL, NULL) != AL_OK) {
        goto out;
    }
    if (json_parse(once.data, once.len, 64, &again, NULL) != AL_OK) {
        fail("canonical output is not JSON");
    }
    if (jcs_write(&twice, json_root(again), NULL, NULL) != AL_OK) {
        fail("canonical output has no canonical form");
    }
    if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0) {
        fail("canonicalizing canonical output changed it");
    }
out:
    json_doc_free(doc);
    json_doc_free(again);
    buf_done(&once);
    buf_done(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct audit_verifier *v = NULL;
    struct audit_problem first;
    struct audit_problem p;
    enum audit_fault f = AUDIT_FAULT_NONE;

    check_jcs(text, size);
    if (audit_verifier_new(NULL, 0, &v, NULL) != AL_OK) {
        fail("audit_verifier_new failed");
    }
    size_t start = 0;
    while (start < size && f == AUDIT_FAULT_NONE) {
        const char *nl = memchr(text + start, '\n', size - start);
        size_t end = nl ? (size_t)(nl - text) : size;
        /* Each line in its own allocation, so ASan sees any read past it. */
        char *line = malloc(end - start + 1);
        if (!line) {
            fail("out of memory");
        }
        memcpy(line, text + start, end - start);
        f = audit_verifier_line(v, line, end - start, &first);
        free(line);
        start = end + 1;
    }
    if (f != AUDIT_FAULT_NONE) {
        if (audit_verifier_line(v, "{}", 2, &p) != f || p.seq != first.seq ||
            p.line != first.line) {
            fail("a fault was not given again");
        }
    }
    enum audit_fault end = audit_verifier_finish(v, &p);
    if (f != AUDIT_FAULT_NONE && end != f) {
        fail("finish forgot the fault a line gave");
    }
    struct audit_summary s;
    audit_verifier_summary(v, &s);
    if (s.records != s.last_seq || s.sealed_seq >= s.last_seq + (s.last_seq == 0)) {
        fail("summary out of step");
    }
    audit_verifier_free(v);
    return 0;
}
