/*
 * api_audit.c - the audit log over HTTP (admin and auditor): pages of records, the export, the
 * check of the stored chain and a signed checkpoint of its head. Records are answered as their
 * stored canonical lines, the very bytes the hash covers, never rebuilt from columns. The export
 * first seals the log (a checkpoint of its last record, appended unless the last record is one
 * already), so every export ends as docs/audit.md requires and `airlock audit verify` accepts
 * it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "audit.h"
#include "auditlog.h"

#define API_AUDIT_LIMIT_DEFAULT 100
#define API_AUDIT_LIMIT_MAX     1000

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

static int api_audit_line(void *userdata, const struct store_audit *a)
{
    struct api_audit_page *pg = userdata;
    buf_append_str(pg->b, a->line ? a->line : "");
    buf_append_byte(pg->b, '\n');
    pg->n++;
    pg->last = a->seq;
    return 0;
}

void api_audit_export(struct api_ctx *ctx)
{
    struct store *s = ctx->store;
    struct store_checkpoint cp;
    struct api_audit_page pg = { &ctx->resp->body, 0, 0 };
    enum store_rc rc = s->ops->audit_checkpoint(s, 1, &cp);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        api_store_failed(ctx);
        return;
    }
    api_reply(ctx, 200);
    ctx->resp->content_type = "application/x-ndjson";
    do {
        pg.n = 0;
        if (s->ops->audit_list(s, pg.last, 1000, api_audit_line, &pg) != STORE_OK) {
            api_store_failed(ctx);
            return;
        }
    } while (pg.n > 0);
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
