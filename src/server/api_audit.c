/*
 * api_audit.c - the audit log over HTTP (admin and auditor): pages of records, the export, the
 * check of the stored chain and a signed checkpoint of its head. Records are answered as their
 * stored canonical lines, the very bytes the hash covers, never rebuilt from columns. The export
 * first seals the log (a checkpoint of its last record, appended unless the last record is one
 * already; a writer job), so every export ends as docs/audit.md requires and `airlock audit
 * verify` accepts it. It is then streamed, a page of records at a time on a reader taken for
 * that page, up to that seal and no further: the log only grows, so pages by seq are one
 * consistent prefix without holding a snapshot, nobody waits for it, and memory stays one page
 * whatever the log's length.
 *
 * The check remembers what it verified (struct audit_head: the last record and its hash, or the
 * first fault), so GET /v1/audit/verify costs only the records appended since; ?full=true starts
 * over from the first record, under a rate limit of its own. A long check is streamed a few
 * thousand records per call, answering leading spaces until its JSON object (valid JSON), so
 * that other requests on the same thread are served in between.
 *
 * Records follow the reader's departments (gov_audit_may_see): an auditor of finance lists
 * finance's records only, and never a record without a department (principals, keys, grants for
 * all, refusals, checkpoints). The export is the whole chain or nothing, since a chain with
 * records left out no longer verifies: only a reader of every record exports. The check tells
 * an auditor of some departments whether the chain holds and where it breaks, but not what it
 * found there (a fault's reason may quote what another department's record holds).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "audit.h"
#include "auditlog.h"
#include "ratelimit.h"
#include "readers.h"

#define API_AUDIT_LIMIT_DEFAULT 100
#define API_AUDIT_LIMIT_MAX     1000
#define API_AUDIT_PAGE          256          /* records read per page of the export */
#define API_AUDIT_PAGE_BYTES    (256 * 1024) /* and a page ends early past this much */
#define API_AUDIT_CHECK_STEP    2000         /* records verified per call of a streamed check */
#define API_AUDIT_SCAN_MAX      10000 /* records a page reads for a reader of some departments */

struct api_audit_page {
    struct buf *b;
    const struct gov_principal *reader;
    int64_t limit; /* records to answer */
    int64_t n;
    int64_t last;
};

static int api_audit_item(void *userdata, const struct store_audit *a)
{
    struct api_audit_page *pg = userdata;
    struct gov_decision d;
    if (pg->n >= pg->limit) {
        return 1;
    }
    pg->last = a->seq; /* a hidden record too: the next page goes on past it */
    if (!gov_audit_may_see(pg->reader, a->department, &d)) {
        return 0;
    }
    if (pg->n++) {
        buf_append_str(pg->b, ",");
    }
    buf_append_str(pg->b, a->line ? a->line : "null");
    return 0;
}

/* A query argument as a non-negative integer up to max; def when absent. -1 when malformed. */
static int api_audit_number(struct api_ctx *ctx, const char *name, int64_t def, int64_t max,
                            int64_t *ret)
{
    const char *text = http_query(ctx->req, name);
    if (!text) {
        *ret = def;
        return 0;
    }
    long long v = strtoll(text, NULL, 10); /* saturates: too long is past max too */
    if (!*text || strspn(text, "0123456789") != strlen(text) || v > max) {
        api_error(ctx, 400, "INVALID_REQUEST",
                  "query argument %s must be an integer in 0..%" PRId64, name, max);
        return -1;
    }
    *ret = v;
    return 0;
}

static const char *api_audit_text(struct api_ctx *ctx, const char *name)
{
    const char *v = http_query(ctx->req, name);
    return v && v[0] ? v : NULL;
}

void api_audit_list(struct api_ctx *ctx)
{
    struct buf *b = &ctx->resp->body;
    int64_t after = 0;
    int64_t limit = 0;
    if (api_audit_number(ctx, "after", 0, (int64_t)AUDIT_MAX_SEQ, &after) != 0 ||
        api_audit_number(ctx, "limit", API_AUDIT_LIMIT_DEFAULT, API_AUDIT_LIMIT_MAX, &limit) != 0) {
        return;
    }
    struct store_audit_filter filter = { api_audit_text(ctx, "action"), api_audit_text(ctx, "run"),
                                         api_audit_text(ctx, "template") };
    struct api_audit_page pg = { b, &ctx->who->gov, limit, 0, after };
    struct gov_decision d;
    /* a reader of some departments reads on past the records it may not see, up to limit
     * records it may see, the log's end or API_AUDIT_SCAN_MAX records read (a page may then
     * hold fewer than limit: `next` says where the next one starts) */
    int64_t most = gov_audit_may_see(pg.reader, NULL, &d) ? limit : API_AUDIT_SCAN_MAX;
    api_reply(ctx, 200);
    buf_append_str(b, "{\"records\":[");
    if (limit > 0 && ctx->store->ops->audit_search(ctx->store, after, most, &filter, api_audit_item,
                                                   &pg) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_printf(b, "],\"next\":%" PRId64 "}\n", pg.last);
}

/* The export being streamed: records after `after` up to `end` (the sealing checkpoint), read
 * a page at a time on a reader and sent from `page`, so memory stays at one page whatever the
 * log's size. */
struct api_audit_stream {
    struct readers *readers;
    int64_t after;   /* the last seq read */
    int64_t end;     /* the last seq to send */
    struct buf page; /* lines read and not yet sent in full */
    size_t sent;     /* bytes of page already sent */
};

/* Copies what is left of b after *sent into out, at most max bytes. */
static ssize_t api_audit_send(const struct buf *b, size_t *sent, char *out, size_t max)
{
    size_t n = b->len - *sent < max ? b->len - *sent : max;
    memcpy(out, b->data + *sent, n);
    *sent += n;
    return (ssize_t)n;
}

static int api_audit_line(void *userdata, const struct store_audit *a)
{
    struct api_audit_stream *st = userdata;
    if (a->seq > st->end) {
        return 1;
    }
    buf_append_str(&st->page, a->line ? a->line : "");
    buf_append_byte(&st->page, '\n');
    st->after = a->seq;
    /* a page of a few large records (a version's source) ends early */
    return st->page.len >= API_AUDIT_PAGE_BYTES;
}

static ssize_t api_audit_stream_read(void *userdata, char *out, size_t max)
{
    struct api_audit_stream *st = userdata;
    if (st->sent == st->page.len) {
        if (st->after >= st->end) {
            return HTTP_STREAM_END;
        }
        int64_t before = st->after;
        int64_t limit = st->end - st->after;
        buf_reset(&st->page);
        st->sent = 0;
        struct store *s = readers_take(st->readers);
        enum store_rc rc = s ? s->ops->audit_list(s, st->after,
                                                  limit < API_AUDIT_PAGE ? limit : API_AUDIT_PAGE,
                                                  api_audit_line, st)
                             : STORE_ERROR;
        readers_give(st->readers, s);
        if (rc != STORE_OK || st->after == before || st->page.len == 0) {
            /* a failed read, or records gone from under a prefix that existed: cut short, so
             * the export fails to verify rather than looking whole */
            fprintf(stderr, "airlockd: audit export stopped after seq %" PRId64 "\n", before);
            return HTTP_STREAM_ERROR;
        }
    }
    return api_audit_send(&st->page, &st->sent, out, max);
}

static void api_audit_stream_free(void *userdata)
{
    struct api_audit_stream *st = userdata;
    if (st) {
        buf_done(&st->page);
        free(st);
    }
}

/* A checkpoint this server could not sign: CONFLICT is a key the log has retired (a rotation
 * this node has not taken yet, docs/operations.md), said as it is. */
static void api_audit_not_signed(struct api_ctx *ctx, enum store_rc rc)
{
    if (rc == STORE_CONFLICT) {
        api_error(ctx, 500, "INTERNAL", "%.400s", ctx->store->ops->errmsg(ctx->store));
    } else {
        api_store_failed(ctx);
    }
}

void api_audit_export(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct store_checkpoint cp;
    struct api_audit_stream *st = NULL;
    struct gov_decision d;
    /* the chain verifies whole or not at all: only a reader of every record exports it */
    gov_audit_may_see(&ctx->who->gov, NULL, &d);
    if (api_decision(ctx, &d) != 0) {
        return;
    }
    /* the seal is appended under the router's lock: its seq is the end of a prefix that
     * verifies; what is appended while the export streams is left for the next one */
    enum store_rc rc = s->ops->audit_checkpoint(s, 1, &cp);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_audit_not_signed(ctx, rc);
        return;
    }
    st = ctx->svc && ctx->svc->readers ? calloc(1, sizeof *st) : NULL;
    if (!st) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return;
    }
    st->readers = ctx->svc->readers;
    st->end = rc == STORE_OK ? cp.seq : 0;
    /* one record may be up to the 768 KiB a version's record is allowed, on top of a full page */
    buf_init(&st->page, API_AUDIT_PAGE_BYTES + ((size_t)1 << 20));
    api_reply(ctx, 200);
    ctx->resp->content_type = "application/x-ndjson";
    http_stream(ctx->resp, api_audit_stream_read, api_audit_stream_free, st);
}

struct audit_head {
    pthread_mutex_t lock;
    struct auditlog_result res; /* ok: the chain verifies up to res.records (res.head its hash) */
    int known;                  /* res holds a verification */
};

struct audit_head *api_audit_head_new(void)
{
    struct audit_head *h = calloc(1, sizeof *h);
    if (h) {
        pthread_mutex_init(&h->lock, NULL);
    }
    return h;
}

void api_audit_head_free(struct audit_head *h)
{
    if (h) {
        pthread_mutex_destroy(&h->lock);
        free(h);
    }
}

/* A verification's result: a fault stays until a full check clears it; a success moves the
 * head forward, never back (a check that started earlier may end later). */
void api_audit_head_set(struct audit_head *h, const struct auditlog_result *res, int full)
{
    pthread_mutex_lock(&h->lock);
    if (full || !h->known || (h->res.ok && (!res->ok || res->records > h->res.records))) {
        h->res = *res;
        h->known = 1;
    }
    pthread_mutex_unlock(&h->lock);
}

/* A verification's result as JSON; `brief`: the reason is only the fault's name, without
 * what it found in the record (for a reader of some departments only). */
static void api_audit_result_json(struct buf *b, const struct auditlog_result *res, int brief)
{
    if (res->ok) {
        buf_printf(b, "{\"ok\":true,\"records\":%" PRId64 ",\"head\":", res->records);
        api_str(b, res->head);
        buf_append_str(b, "}\n");
    } else {
        buf_printf(b,
                   "{\"ok\":false,\"first_bad_seq\":%" PRId64 ",\"reason\":", res->first_bad_seq);
        const char *colon = brief ? strchr(res->reason, ':') : NULL;
        json_write_string(b, res->reason,
                          colon ? (size_t)(colon - res->reason) : strlen(res->reason));
        buf_append_str(b, "}\n");
    }
}

/* A check that did not finish in the handler, going on a step per call. */
struct api_verify {
    struct readers *readers;
    struct audit_head *head;
    struct auditlog_kept *kept;
    struct auditlog_check *check;
    int full;
    int brief; /* api_audit_result_json's */
    int done;
    struct buf answer; /* the JSON object, once done */
    size_t sent;
};

/* Ends a finished check: a whole chain is then checked against the checkpoint kept outside the
 * database (through s: a cut tail leaves a chain that is whole), and the result goes to the head
 * (when there is one) and, as JSON, to b. */
static enum store_rc api_verify_done(const struct api_verify *v, struct store *s, struct buf *b)
{
    struct auditlog_result res;
    struct auditlog_result kept;
    enum store_rc rc = STORE_OK;
    auditlog_check_result(v->check, &res);
    if (res.ok && v->kept) {
        rc = auditlog_kept_check(v->kept, s, &kept);
        if (rc != STORE_OK) {
            return rc;
        }
        if (!kept.ok) {
            res = kept;
        }
    }
    if (v->head) {
        api_audit_head_set(v->head, &res, v->full);
    }
    api_audit_result_json(b, &res, v->brief);
    return STORE_OK;
}

static ssize_t api_verify_read(void *userdata, char *out, size_t max)
{
    struct api_verify *v = userdata;
    if (!v->done) {
        struct store *s = readers_take(v->readers);
        enum store_rc rc =
                s ? auditlog_check_step(v->check, s, API_AUDIT_CHECK_STEP, &v->done) : STORE_ERROR;
        if (rc == STORE_OK && v->done) {
            rc = api_verify_done(v, s, &v->answer);
        }
        readers_give(v->readers, s);
        if (rc != STORE_OK) {
            fprintf(stderr, "airlockd: the audit check could not read the log\n");
            return HTTP_STREAM_ERROR;
        }
        if (!v->done) {
            out[0] = ' '; /* JSON's leading whitespace: the client waits, the thread serves */
            return 1;
        }
        if (buf_failed(&v->answer)) {
            return HTTP_STREAM_ERROR;
        }
    }
    if (v->sent == v->answer.len) {
        return HTTP_STREAM_END;
    }
    return api_audit_send(&v->answer, &v->sent, out, max);
}

static void api_verify_free(void *userdata)
{
    struct api_verify *v = userdata;
    if (v) {
        auditlog_check_free(v->check);
        buf_done(&v->answer);
        free(v);
    }
}

void api_audit_verify(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct store_checkpoint cp;
    struct auditlog_result known;
    struct api_verify *v = NULL;
    struct audit_head *head = ctx->svc ? ctx->svc->audit : NULL;
    const char *full_arg = http_query(ctx->req, "full");
    int64_t end = 0;
    int done = 0;
    struct gov_decision d;
    int brief = !gov_audit_may_see(&ctx->who->gov, NULL, &d);
    if (full_arg && strcmp(full_arg, "true") != 0 && strcmp(full_arg, "false") != 0) {
        api_error(ctx, 400, "INVALID_REQUEST", "query argument full must be true or false");
        return;
    }
    int full = !head || (full_arg && strcmp(full_arg, "true") == 0);
    unsigned retry = 0;
    if (full && head && ctx->svc->verify_limit &&
        ratelimit_take(ctx->svc->verify_limit, "audit.verify.full", &retry) != 0) {
        api_error(ctx, 429, "RATE_LIMITED",
                  "a full re-verification of the audit log ran recently: retry later");
        ctx->resp->retry_after_s = retry;
        return;
    }
    memset(&known, 0, sizeof known);
    if (head) {
        pthread_mutex_lock(&head->lock);
        known = head->res;
        full |= !head->known;
        pthread_mutex_unlock(&head->lock);
    }
    if (!full && !known.ok) {
        api_reply(ctx, 200); /* broken before: nothing appended since can mend it */
        api_audit_result_json(&ctx->resp->body, &known, brief);
        return;
    }
    /* the key the checkpoints must carry: this server's */
    enum store_rc rc = s->ops->audit_checkpoint(s, 0, &cp);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_audit_not_signed(ctx, rc);
        return;
    }
    if (s->ops->audit_head(s, &end) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    v = calloc(1, sizeof *v);
    if (!v || auditlog_check_new(rc == STORE_OK ? cp.public_key : NULL, full ? 0 : known.records,
                                 full ? NULL : known.head, end, &v->check) != 0) {
        free(v);
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return;
    }
    v->readers = ctx->svc ? ctx->svc->readers : NULL;
    v->head = head;
    v->kept = ctx->svc ? ctx->svc->kept : NULL;
    v->full = full;
    v->brief = brief;
    buf_init(&v->answer, 4096);
    /* the first step here: a check of what was appended since the last is usually all */
    rc = auditlog_check_step(v->check, s, API_AUDIT_CHECK_STEP, &done);
    if (rc != STORE_OK) {
        api_verify_free(v);
        api_store_failed(ctx);
        return;
    }
    api_reply(ctx, 200);
    if (done || !v->readers) {
        while (!done && rc == STORE_OK) {
            rc = auditlog_check_step(v->check, s, API_AUDIT_CHECK_STEP, &done);
        }
        if (rc == STORE_OK) {
            rc = api_verify_done(v, s, &ctx->resp->body);
        }
        api_verify_free(v);
        if (rc != STORE_OK) {
            api_store_failed(ctx);
        }
        return;
    }
    http_stream(ctx->resp, api_verify_read, api_verify_free, v);
}

void api_audit_checkpoint(struct api_ctx *ctx)
{
    struct store_checkpoint cp;
    enum store_rc rc = ctx->store->ops->audit_checkpoint(ctx->store, 0, &cp);
    if (rc == STORE_NOT_FOUND) {
        api_error(ctx, 404, "NOT_FOUND", "the audit log is empty");
        return;
    }
    if (rc != STORE_OK) {
        api_audit_not_signed(ctx, rc);
        return;
    }
    /* a checkpoint handed out is one airlockd keeps too: the log may not end before it */
    auditlog_kept_keep(ctx->svc ? ctx->svc->kept : NULL, ctx->store, &cp);
    api_reply(ctx, 200);
    auditlog_checkpoint_json(&cp, &ctx->resp->body);
}
