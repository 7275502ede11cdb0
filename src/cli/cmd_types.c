/*
 * cmd_types.c - `airlock types TEMPLATE [VERSION]`: the TypeScript declarations of a template
 * version's host functions and input, from airlockd (GET /v1/templates/{t}/versions/{v}/types),
 * to paste into a model's prompt or check a template with tsc (docs/typescript.md). airlockd is
 * AIRLOCK_URL, the caller AIRLOCK_KEY. Without VERSION: the newest approved version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "json.h"

static const char types_usage[] =
        "usage: airlock types TEMPLATE [VERSION]\n"
        "  prints the TypeScript declarations of the version's host functions, console and\n"
        "  input (default: the newest approved version), from airlockd at $AIRLOCK_URL with\n"
        "  the key $AIRLOCK_KEY\n"
        "exit status: 0 printed, 1 airlockd refused or could not be reached, 2 usage\n";

/* The newest approved version of the template's answer (GET /v1/templates/{t}); 0 when none. */
static long long types_newest_approved(const struct buf *body)
{
    struct json_doc *doc = NULL;
    long long best = 0;
    if (json_parse(body->data, body->len, 64, &doc, NULL) != AL_OK) {
        return 0;
    }
    const struct json_node *versions = json_get(json_root(doc), "versions");
    for (const struct json_node *v = versions && versions->type == JSON_ARRAY ? versions->child
                                                                              : NULL;
         v; v = v->next) {
        const struct json_node *n = json_get(v, "version");
        const struct json_node *st = json_get(v, "state");
        if (n && st && n->type == JSON_NUMBER && st->type == JSON_STRING &&
            strcmp(st->str, "approved") == 0 && n->num > (double)best) {
            best = (long long)n->num;
        }
    }
    json_doc_free(doc);
    return best;
}

int cmd_types(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(types_usage, stdout);
        return 0;
    }
    if (argc < 2 || argc > 3) {
        fputs(types_usage, stderr);
        return 2;
    }
    const char *tpl = argv[1];
    char *end = NULL;
    long long version = argc == 3 ? strtoll(argv[2], &end, 10) : 0;
    if (!client_segment_ok(tpl) || (argc == 3 && (*argv[2] == '\0' || *end || version < 1))) {
        cli_error("types: TEMPLATE is a template's name and VERSION a number from 1");
        return 2;
    }
    struct client c;
    if (client_open(&c, "types") != 0) {
        return 2;
    }
    char path[512];
    struct buf body;
    long status = 0;
    int rc = 1;
    buf_init(&body, CLIENT_ANSWER_MAX);
    if (!version) {
        snprintf(path, sizeof path, "/v1/templates/%s", tpl);
        if (client_request(&c, "GET", path, NULL, 0, &body, &status) != 0) {
            goto out;
        }
        if (status != 200) {
            client_refused(tpl, status, &body);
            goto out;
        }
        version = types_newest_approved(&body);
        if (!version) {
            cli_error("types: template %s has no approved version", tpl);
            goto out;
        }
        buf_reset(&body);
    }
    snprintf(path, sizeof path, "/v1/templates/%s/versions/%lld/types", tpl, version);
    if (client_request(&c, "GET", path, NULL, 0, &body, &status) != 0) {
        goto out;
    }
    if (status != 200 || !body.data) {
        client_refused(tpl, status, &body);
        goto out;
    }
    fwrite(body.data, 1, body.len, stdout);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    buf_done(&body);
    client_close(&c);
    return rc;
}
