/*
 * ui.h - the approver's desk: airlockd's web UI (src/server/ui/), embedded at build time by
 * gen_ui.cmake and served beside the API. Every page path (/, /approvals, /runs/{id}, ...)
 * answers the same index.html shell, whose script renders the page from location.pathname; the
 * assets are under /ui/. Every answer carries a strict Content-Security-Policy (no inline
 * script or style, no other origin), an ETag (If-None-Match answers 304) and nosniff. Nothing
 * here reads a key or the store: the UI is public, what it shows comes from /v1/ with the
 * user's bearer key.
 */
#ifndef AIRLOCK_SERVER_UI_H
#define AIRLOCK_SERVER_UI_H

#include <stddef.h>

struct api_ctx;

struct ui_asset {
    const char *path;         /* "/ui/app.js" */
    const char *content_type; /* "text/javascript; charset=utf-8" */
    const unsigned char *bytes;
    size_t len;       /* bytes, without the NUL gen_ui.cmake appends */
    const char *etag; /* "\"<32 hex of its SHA-256>\"", quotes included */
};

/* The generated table, sorted by path. */
extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_len;

/* The asset at exactly `path`, or NULL. */
const struct ui_asset *ui_asset_find(const char *path);

/* Route handlers (AUTH_PUBLIC rows of router.c): a page path answers index.html; /ui/... the
 * asset named by the request path, 404 NOT_FOUND for an unknown one. */
void ui_page(struct api_ctx *ctx);
void ui_asset(struct api_ctx *ctx);

#endif
