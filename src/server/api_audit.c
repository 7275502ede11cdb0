/*
 * api_audit.c - the audit log over HTTP (admin and auditor): pages of records, the export, the
 * check of the stored chain and a signed checkpoint of its head. Records are answered as their
 * stored canonical lines, the very bytes the hash covers, never rebuilt from columns. The export
 * first seals the log (a checkpoint of its last record, appended unless the last record is one
 * already), so every export ends as docs/audit.md requires and `airlock audit verify` accepts
 * it. It is then streamed, a page of records at a time, up to that seal and no further: the
 * store lock is taken for each page only, since the run writer shares the store, and memory
 * stays one page whatever the log's length.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "audit.h"
#include "auditlog.h"

#define API_AUDIT_LIMIT_DEFAULT 100
#define API_AUDIT_LIMIT_MAX     1000
#define API_AUDIT_PAGE          256          /* records read per lock of the store */
#define API_AUDIT_PAGE_BYTES    (256 * 1024) /* and a page ends early past this much */

struct api_audit_page {
    struct buf *b;
    int64_t n;
    int64_t last;
};

static int api_audit_item(void *userdata, const struct store_audit *a)
{
    struct api_audit_page *pg = userdata;
    if (pg->n++) {
        buf_append_str(pg->b, ",");
    }
    buf_append_str(pg->b, a->line ? a->line : "null");
    pg->last = a->seq;
    return 0;
}

/* A query argument as a non-negative integer up to max; def when absent. -1 when malformed. */
static int api_audit_number(struct api_ctx *ctx, const char *name, int64_t def, int64_t max,
                            int64_t *ret)
{
    const char *text = http_query(ctx->req, name);
    char *end = NULL;
    if (!text) {
        *ret = def;
        return 0;
    }
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || text[0] < '0' || text[0] > '9' || v > max) {
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
    struct api_audit_page pg = { b, 0, after };
    api_reply(ctx, 200);
    buf_append_str(b, "{\"records\":[");
    if (ctx->store->ops->audit_search(ctx->store, after, limit, &filter, api_audit_item, &pg) !=
        STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    buf_printf(b, "],\"next\":%" PRId64 "}\n", pg.last);
}

/* The export being streamed: records after `after` up to `end` (the sealing checkpoint), read
 * a page at a time under the store lock and sent from `page` without it, so memory stays at one
 * page whatever the log's size, and the run writer waits for one page's read at most. */
struct api_audit_stream {
    struct store *store;
    pthread_mutex_t *lock; /* the router's store lock; NULL when the store is not shared */
    int64_t after;         /* the last seq read */
    int64_t end;           /* the last seq to send */
    struct buf page;       /* lines read and not yet sent in full */
    size_t sent;           /* bytes of page already sent */
};

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
        if (st->lock) {
            pthread_mutex_lock(st->lock);
        }
        enum store_rc rc = st->store->ops->audit_list(
                st->store, st->after, limit < API_AUDIT_PAGE ? limit : API_AUDIT_PAGE,
                api_audit_line, st);
        if (st->lock) {
            pthread_mutex_unlock(st->lock);
        }
        if (rc != STORE_OK || st->after == before || st->page.len == 0) {
            /* a failed read, or records gone from under a prefix that existed: cut short, so
             * the export fails to verify rather than looking whole */
            fprintf(stderr, "airlockd: audit export stopped after seq %" PRId64 "\n", before);
            return HTTP_STREAM_ERROR;
        }
    }
    size_t n = st->page.len - st->sent;
    if (n > max) {
        n = max;
    }
    memcpy(out, st->page.data + st->sent, n);
    st->sent += n;
    return (ssize_t)n;
}

static void api_audit_stream_free(void *userdata)
{
    struct api_audit_stream *st = userdata;
    if (st) {
        buf_done(&st->page);
        free(st);
    }
}

void api_audit_export(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct store_checkpoint cp;
    struct api_audit_stream *st = NULL;
    /* the seal is appended under the router's lock: its seq is the end of a prefix that
     * verifies; what is appended while the export streams is left for the next one */
    enum store_rc rc = s->ops->audit_checkpoint(s, 1, &cp);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(ctx);
        return;
    }
    st = calloc(1, sizeof *st);
    if (!st) {
        api_error(ctx, 500, "INTERNAL", "out of memory");
        return;
    }
    st->store = s;
    st->lock = ctx->svc ? ctx->svc->store_lock : NULL;
    st->end = rc == STORE_OK ? cp.seq : 0;
    /* one record may be up to the 768 KiB a version's record is allowed, on top of a full page */
    buf_init(&st->page, API_AUDIT_PAGE_BYTES + ((size_t)1 << 20));
    api_reply(ctx, 200);
    ctx->resp->content_type = "application/x-ndjson";
    http_stream(ctx->resp, api_audit_stream_read, api_audit_stream_free, st);
}

void api_audit_verify(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct store_checkpoint cp;
    struct auditlog_result res;
    /* the key the checkpoints must carry: this server's */
    enum store_rc rc = s->ops->audit_checkpoint(s, 0, &cp);
    if ((rc != STORE_OK && rc != STORE_NOT_FOUND) ||
        auditlog_verify(s, rc == STORE_OK ? cp.public_key : NULL, &res) != STORE_OK) {
        api_store_failed(ctx);
        return;
    }
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 200);
    if (res.ok) {
        buf_printf(b, "{\"ok\":true,\"records\":%" PRId64 ",\"head\":", res.records);
        api_str(b, res.head);
        buf_append_str(b, "}\n");
    } else {
        buf_printf(b, "{\"ok\":false,\"first_bad_seq\":%" PRId64 ",\"reason\":", res.first_bad_seq);
        json_write_string(b, res.reason, strlen(res.reason));
        buf_append_str(b, "}\n");
    }
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
        api_store_failed(ctx);
        return;
    }
    struct buf *b = &ctx->resp->body;
    api_reply(ctx, 200);
    buf_printf(b,
               "{\"seq\":%" PRId64 ",\"hash\":\"%s\",\"time\":\"%s\",\"public_key\":\"%s\","
               "\"signature\":\"%s\"}\n",
               cp.seq, cp.hash, cp.time, cp.public_key, cp.signature);
}
