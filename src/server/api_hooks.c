/*
 * api_hooks.c - what other parts of airlockd do when a template's state changes. For now
 * nothing: the runs engine replaces this file (a revoked version's runs in progress are
 * cancelled and its pending approvals closed there). Called after the change has committed.
 */
#include "api.h"

void api_version_revoked(struct api_ctx *ctx, const char *template_name, int64_t version)
{
    (void)ctx;
    (void)template_name;
    (void)version;
}
