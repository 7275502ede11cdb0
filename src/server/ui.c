/*
 * ui.c - serves the embedded web UI (ui.h). The page paths all answer the one HTML shell: the
 * shell's module script routes by location.pathname, so a link a person pastes opens its page,
 * and an unknown template or run is the script's "not found", not the server's. Every answer
 * carries the same security headers: the CSP allows scripts, styles and fetches from this
 * origin alone and no inline code (so text a guest controls that ever reached the DOM as HTML
 * still could not run), forbids framing (clickjacking an Approve button) and form posts; nosniff
 * keeps a browser from reading an asset as another type; no-referrer keeps run ids out of other
 * sites' logs. Cache-Control no-cache makes the browser revalidate with the ETag, so a new
 * airlockd binary is seen at once and an unchanged asset costs a 304.
 */
#include "ui.h"

#include <string.h>

#include "api.h"

static const char ui_csp[] =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* clang-format off */
static const char *const ui_headers[] = {
    "Content-Security-Policy", ui_csp,
    "X-Content-Type-Options", "nosniff",
    "Referrer-Policy", "no-referrer",
    "X-Frame-Options", "DENY",
    "Cache-Control", "no-cache",
    NULL,
};
/* clang-format on */

const struct ui_asset *ui_asset_find(const char *path)
{
    size_t lo = 0;
    size_t hi = ui_assets_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(path, ui_assets[mid].path);
        if (c == 0) {
            return &ui_assets[mid];
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

/* 1 when If-None-Match names etag (or is "*"): the client's copy is current. A weak W/"..."
 * form of the same tag matches too (RFC 9110 uses the weak comparison for If-None-Match). */
static int ui_not_modified(const struct api_ctx *ctx, const char *etag)
{
    const char *inm = http_header(ctx->req, "If-None-Match");
    return inm && (strcmp(inm, "*") == 0 || strstr(inm, etag) != NULL);
}

/* Answers asset a, or the error (status, message) when there is none. */
static void ui_send(struct api_ctx *ctx, const struct ui_asset *a, unsigned status,
                    const char *message)
{
    struct http_response *resp = ctx->resp;
    if (!a) {
        api_error(ctx, status, status == 404 ? "NOT_FOUND" : "INTERNAL", "%s", message);
        return;
    }
    resp->headers = ui_headers;
    resp->etag = a->etag;
    resp->content_type = a->content_type;
    buf_reset(&resp->body);
    if (ui_not_modified(ctx, a->etag)) {
        resp->status = 304;
        return;
    }
    resp->status = 200;
    if (buf_append(&resp->body, a->bytes, a->len) != BUF_OK) {
        resp->headers = NULL;
        resp->etag = NULL;
        api_error(ctx, 500, "INTERNAL", "out of memory");
    }
}

void ui_page(struct api_ctx *ctx)
{
    ui_send(ctx, ui_asset_find("/ui/index.html"), 500, "this airlockd was built without its UI");
}

void ui_asset(struct api_ctx *ctx)
{
    ui_send(ctx, ui_asset_find(ctx->req->path), 404, "no such UI asset");
}
