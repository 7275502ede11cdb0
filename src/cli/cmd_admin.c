/*
 * cmd_admin.c - `airlock admin principals|connectors|departments ...`: what an admin does on
 * airlockd from a terminal (docs/server.md "Routes", "Connectors"): list and show, change
 * (PATCH) and delete principals, connectors and departments. Each subcommand is one request;
 * airlockd decides and audits, and its refusal is printed with its code (a connector change
 * that would alter what an approved version may do is refused unless --force). A connector's
 * signing secret and header values are read from files, never taken from the command line,
 * where other users of the machine could read them (ps, /proc).
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "client_cmd.h"
#include "json.h"
#include "term.h"

#define ADMIN_BODY_MAX ((size_t)1 << 20)

/* Each element of an array answer through `print`, or "none" for an empty one. */
static void admin_print_each(const struct json_node *list, client_cmd_print_fn *print,
                             const char *none)
{
    if (list->type != JSON_ARRAY || list->count == 0) {
        printf("%s\n", none);
        return;
    }
    for (const struct json_node *n = list->child; n; n = n->next) {
        print(n);
    }
}

/* `airlock admin GROUP list|show NAME|delete NAME` share their parsing. */
static int admin_args(const char *what, const char *usage, int argc, char **argv, int *json,
                      const char **pos, size_t npos)
{
    const struct client_cmd_opt opts[] = { { "--json", NULL, json } };
    int a = client_cmd_args(what, usage, argc, argv, opts, 1, pos, npos, npos);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    for (size_t i = 0; i < npos; i++) {
        if (client_cmd_name(what, "name", pos[i]) != 0) {
            return CLI_EXIT_USAGE;
        }
    }
    return -1; /* go on */
}

static void admin_print_deleted(const struct json_node *doc)
{
    fputs("deleted ", stdout);
    client_cmd_put(stdout, doc, "name", "?");
    const struct json_node *revoked = json_get(doc, "revoked");
    for (const struct json_node *v = revoked && revoked->type == JSON_ARRAY ? revoked->child : NULL;
         v; v = v->next) {
        fputs(v == revoked->child ? "; revoked " : ", ", stdout);
        client_cmd_put(stdout, v, "template", "?");
        fputs(" v", stdout);
        client_cmd_put(stdout, v, "version", "?");
    }
    fputc('\n', stdout);
}

/* ---------------------------------------------------------------- principals */

/* "agent-7  agent  disabled  alice@example.com  agent@finance, approver@*" */
static void admin_print_principal(const struct json_node *p)
{
    client_cmd_put(stdout, p, "name", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, p, "kind", "?");
    const struct json_node *disabled = json_get(p, "disabled");
    fputs(disabled && disabled->type == JSON_TRUE ? "  disabled" : "  enabled", stdout);
    fputs("  ", stdout);
    client_cmd_put(stdout, p, "identity", "-");
    fputs("  roles: ", stdout);
    const struct json_node *roles = json_get(p, "roles");
    int n = 0;
    for (const struct json_node *r = roles && roles->type == JSON_ARRAY ? roles->child : NULL; r;
         r = r->next) {
        fputs(n++ ? ", " : "", stdout);
        client_cmd_put(stdout, r, "role", "?");
        fputc('@', stdout);
        client_cmd_put(stdout, r, "department", "?");
    }
    fputs(n ? "\n" : "-\n", stdout);
    const struct json_node *keys = json_get(p, "keys");
    for (const struct json_node *k = keys && keys->type == JSON_ARRAY ? keys->child : NULL; k;
         k = k->next) {
        fputs("    key ", stdout);
        client_cmd_put(stdout, k, "prefix", "?");
        const char *revoked = client_cmd_str(k, "revoked");
        fputs(revoked ? "  revoked " : "  active since ", stdout);
        client_cmd_put(stdout, k, revoked ? "revoked" : "created", "?");
        fputc('\n', stdout);
    }
}

static void admin_print_principals(const struct json_node *list)
{
    admin_print_each(list, admin_print_principal, "no principals");
}

static const char principals_list_usage[] =
        "usage: airlock admin principals list [--json]\n"
        "  every principal with its kind, identity, roles and keys (by prefix)\n"
        "  (admin, or auditor: the principals of its departments)\n" CLIENT_CMD_EXIT_HELP;
static const char principals_show_usage[] =
        "usage: airlock admin principals show NAME [--json]\n"
        "  one principal with its grants and keys\n" CLIENT_CMD_EXIT_HELP;
static const char principals_patch_usage[] =
        "usage: airlock admin principals patch NAME [--identity ID | --no-identity]\n"
        "                                      [--disable | --enable] [--json]\n"
        "  links a user to the identity its identity provider signs it in as, or unlinks it;\n"
        "  disables a principal (its keys and sessions answer 401, its runs in progress\n"
        "  are cancelled) or enables it again (admin)\n" CLIENT_CMD_EXIT_HELP;
static const char principals_delete_usage[] =
        "usage: airlock admin principals delete NAME [--json]\n"
        "  deletes a principal with its keys and grants; its runs in progress are cancelled\n"
        "  (admin)\n" CLIENT_CMD_EXIT_HELP;

static int principals_list(int argc, char **argv)
{
    int json = 0;
    int rc = admin_args("admin principals list", principals_list_usage, argc, argv, &json, NULL, 0);
    return rc >= 0 ? rc
                   : client_cmd_request("admin principals list", "GET", "/v1/principals", NULL,
                                        json, admin_print_principals);
}

static int principals_one(int argc, char **argv, const char *what, const char *usage,
                          const char *method, client_cmd_print_fn *print)
{
    int json = 0;
    const char *pos[1];
    char path[256];
    int rc = admin_args(what, usage, argc, argv, &json, pos, 1);
    if (rc >= 0) {
        return rc;
    }
    snprintf(path, sizeof path, "/v1/principals/%s", pos[0]);
    return client_cmd_request(what, method, path, NULL, json, print);
}

static int principals_show(int argc, char **argv)
{
    return principals_one(argc, argv, "admin principals show", principals_show_usage, "GET",
                          admin_print_principal);
}

static int principals_delete(int argc, char **argv)
{
    return principals_one(argc, argv, "admin principals delete", principals_delete_usage, "DELETE",
                          admin_print_deleted);
}

static int principals_patch(int argc, char **argv)
{
    const char *what = "admin principals patch";
    const char *identity = NULL, *pos[1];
    int no_identity = 0, disable = 0, enable = 0, json = 0;
    const struct client_cmd_opt opts[] = {
        { "--identity", &identity, NULL }, { "--no-identity", NULL, &no_identity },
        { "--disable", NULL, &disable },   { "--enable", NULL, &enable },
        { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, principals_patch_usage, argc, argv, opts,
                            sizeof opts / sizeof opts[0], pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "name", pos[0]) != 0) {
        return CLI_EXIT_USAGE;
    }
    if ((identity && no_identity) || (disable && enable)) {
        cli_error("%s: --identity and --no-identity, --disable and --enable exclude each other",
                  what);
        return CLI_EXIT_USAGE;
    }
    if (!identity && !no_identity && !disable && !enable) {
        cli_error("%s: nothing to change: give --identity, --no-identity, --disable or --enable",
                  what);
        return CLI_EXIT_USAGE;
    }
    struct buf body;
    char path[256];
    buf_init(&body, ADMIN_BODY_MAX);
    buf_append_str(&body, "{");
    if (identity || no_identity) {
        buf_append_str(&body, "\"identity\":");
        if (identity) {
            json_write_string(&body, identity, strlen(identity));
        } else {
            buf_append_str(&body, "null");
        }
    }
    if (disable || enable) {
        buf_printf(&body, "%s\"disabled\":%s", body.len > 1 ? "," : "", disable ? "true" : "false");
    }
    buf_append_str(&body, "}");
    snprintf(path, sizeof path, "/v1/principals/%s", pos[0]);
    int rc = client_cmd_request(what, "PATCH", path, &body, json, admin_print_principal);
    buf_done(&body);
    return rc;
}

static const struct client_cmd_sub principals_subs[] = {
    { "list", principals_list, "every principal with its roles and keys" },
    { "show", principals_show, "one principal with its grants" },
    { "patch", principals_patch, "link an identity, disable or enable" },
    { "delete", principals_delete, "delete a principal with its keys and grants" },
};

static int admin_principals(int argc, char **argv)
{
    return client_cmd_dispatch("admin principals", "  principals (people and agents) on airlockd",
                               argc, argv, principals_subs,
                               sizeof principals_subs / sizeof principals_subs[0]);
}

/* ---------------------------------------------------------------- connectors */

/* "crm  finance  http://...  5000 ms  headers: Authorization
 *     lookup
 *     refund  sensitive" */
static void admin_print_connector(const struct json_node *c)
{
    client_cmd_put(stdout, c, "name", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, c, "department", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, c, "url", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, c, "timeout_ms", "?");
    fputs(" ms  headers: ", stdout);
    const struct json_node *names = json_get(c, "header_names");
    int n = 0;
    for (const struct json_node *h = names && names->type == JSON_ARRAY ? names->child : NULL; h;
         h = h->next) {
        fputs(n++ ? ", " : "", stdout);
        if (h->type == JSON_STRING) {
            term_write(stdout, h->str, h->str_len);
        }
    }
    fputs(n ? "\n" : "-\n", stdout);
    const struct json_node *fns = json_get(c, "functions");
    for (const struct json_node *f = fns && fns->type == JSON_OBJECT ? fns->child : NULL; f;
         f = f->next) {
        fputs("    ", stdout);
        term_write(stdout, f->key, f->key_len);
        for (int i = 0; i < 2; i++) {
            const char *flag = i ? "idempotent" : "sensitive";
            const struct json_node *v = json_get(f, flag);
            if (v && v->type == JSON_TRUE) {
                printf("  %s", flag);
            }
        }
        fputc('\n', stdout);
    }
}

static void admin_print_connectors(const struct json_node *list)
{
    admin_print_each(list, admin_print_connector, "no connectors");
}

static const char connectors_list_usage[] =
        "usage: airlock admin connectors list [--json]\n"
        "  the connectors of your departments: URL, timeout, header names (never their\n"
        "  values) and functions with their flags\n" CLIENT_CMD_EXIT_HELP;
static const char connectors_show_usage[] = "usage: airlock admin connectors show NAME [--json]\n"
                                            "  one connector\n" CLIENT_CMD_EXIT_HELP;
static const char connectors_patch_usage[] =
        "usage: airlock admin connectors patch NAME [--url URL] [--timeout-ms MS]\n"
        "           [--signing-secret-file FILE] [--headers-file FILE] [--functions-file FILE]\n"
        "           [--force] [--json]\n"
        "  changes a connector (admin). The secret (its bytes) and the headers (a JSON object of\n"
        "  name -> value) are read from files (\"-\": stdin), never from the command line; the\n"
        "  functions file is the JSON object POST /v1/connectors takes. A change of what an\n"
        "  approved version may do (the URL; a function it names added, removed, or made\n"
        "  sensitive or idempotent or not) is refused unless --force, which revokes those\n"
        "  versions\n" CLIENT_CMD_EXIT_HELP;
static const char connectors_delete_usage[] =
        "usage: airlock admin connectors delete NAME [--force] [--json]\n"
        "  deletes a connector (admin); refused while an approved version names one of its\n"
        "  functions, unless --force, which revokes those versions first\n" CLIENT_CMD_EXIT_HELP;

static int connectors_list(int argc, char **argv)
{
    int json = 0;
    int rc = admin_args("admin connectors list", connectors_list_usage, argc, argv, &json, NULL, 0);
    return rc >= 0 ? rc
                   : client_cmd_request("admin connectors list", "GET", "/v1/connectors", NULL,
                                        json, admin_print_connectors);
}

static int connectors_show(int argc, char **argv)
{
    int json = 0;
    const char *pos[1];
    char path[256];
    int rc = admin_args("admin connectors show", connectors_show_usage, argc, argv, &json, pos, 1);
    if (rc >= 0) {
        return rc;
    }
    snprintf(path, sizeof path, "/v1/connectors/%s", pos[0]);
    return client_cmd_request("admin connectors show", "GET", path, NULL, json,
                              admin_print_connector);
}

/* Appends ,"member": and the file's JSON object (checked); -1 after saying why. */
static int admin_file_member(const char *what, const char *member, const char *file,
                             struct buf *body)
{
    struct buf text;
    int rc = -1;
    buf_init(&text, ADMIN_BODY_MAX);
    if (client_cmd_read_file(what, file, &text) == 0 &&
        client_cmd_json_object(what, file, text.data, text.len) == 0) {
        buf_printf(body, "%s\"%s\":", body->len > 1 ? "," : "", member);
        json_write_compact(body, text.data, text.len);
        rc = 0;
    }
    if (text.data) {
        memset(text.data, 0, text.len); /* it may hold header values */
    }
    buf_done(&text);
    return rc;
}

static int connectors_patch(int argc, char **argv)
{
    const char *what = "admin connectors patch";
    const char *url = NULL, *timeout = NULL, *secret_file = NULL, *headers_file = NULL;
    const char *functions_file = NULL, *pos[1];
    int force = 0, json = 0;
    const struct client_cmd_opt opts[] = {
        { "--url", &url, NULL },
        { "--timeout-ms", &timeout, NULL },
        { "--signing-secret-file", &secret_file, NULL },
        { "--headers-file", &headers_file, NULL },
        { "--functions-file", &functions_file, NULL },
        { "--force", NULL, &force },
        { "--json", NULL, &json },
    };
    struct buf body, secret;
    char path[256];
    long long ms = 0;
    int rc = CLI_EXIT_USAGE;
    buf_init(&body, 4 * ADMIN_BODY_MAX);
    buf_init(&secret, 4096);
    int a = client_cmd_args(what, connectors_patch_usage, argc, argv, opts,
                            sizeof opts / sizeof opts[0], pos, 1, 1);
    if (a != 0) {
        rc = a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    if (client_cmd_name(what, "name", pos[0]) != 0 ||
        (timeout && client_cmd_number(what, "--timeout-ms", timeout, 60000, &ms) != 0)) {
        goto out;
    }
    if (!url && !timeout && !secret_file && !headers_file && !functions_file) {
        cli_error("%s: nothing to change: give --url, --timeout-ms, --signing-secret-file, "
                  "--headers-file or --functions-file",
                  what);
        goto out;
    }
    buf_append_str(&body, "{");
    if (url) {
        buf_append_str(&body, "\"url\":");
        json_write_string(&body, url, strlen(url));
    }
    if (timeout) {
        buf_printf(&body, "%s\"timeout_ms\":%lld", body.len > 1 ? "," : "", ms);
    }
    if (secret_file) {
        if (client_cmd_read_file(what, secret_file, &secret) != 0) {
            goto out;
        }
        /* a secret file written by an editor or echo ends with a newline that is not the secret */
        while (secret.len > 0 &&
               (secret.data[secret.len - 1] == '\n' || secret.data[secret.len - 1] == '\r')) {
            secret.data[--secret.len] = '\0';
        }
        buf_append_str(&body, body.len > 1 ? ",\"signing_secret\":" : "\"signing_secret\":");
        json_write_string(&body, secret.data, secret.len);
    }
    if ((headers_file && admin_file_member(what, "headers", headers_file, &body) != 0) ||
        (functions_file && admin_file_member(what, "functions", functions_file, &body) != 0)) {
        goto out;
    }
    buf_append_str(&body, "}");
    snprintf(path, sizeof path, "/v1/connectors/%s%s", pos[0], force ? "?force=true" : "");
    rc = client_cmd_request(what, "PATCH", path, &body, json, admin_print_connector);
out:
    if (secret.data) {
        memset(secret.data, 0, secret.len);
    }
    if (body.data) {
        memset(body.data, 0, body.len);
    }
    buf_done(&secret);
    buf_done(&body);
    return rc;
}

static int connectors_delete(int argc, char **argv)
{
    const char *what = "admin connectors delete";
    const char *pos[1];
    int force = 0, json = 0;
    const struct client_cmd_opt opts[] = { { "--force", NULL, &force }, { "--json", NULL, &json } };
    char path[256];
    int a = client_cmd_args(what, connectors_delete_usage, argc, argv, opts, 2, pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "name", pos[0]) != 0) {
        return CLI_EXIT_USAGE;
    }
    snprintf(path, sizeof path, "/v1/connectors/%s%s", pos[0], force ? "?force=true" : "");
    return client_cmd_request(what, "DELETE", path, NULL, json, admin_print_deleted);
}

static const struct client_cmd_sub connectors_subs[] = {
    { "list", connectors_list, "the connectors of your departments" },
    { "show", connectors_show, "one connector" },
    { "patch", connectors_patch, "change its URL, secret, headers, functions or timeout" },
    { "delete", connectors_delete, "delete a connector" },
};

static int admin_connectors(int argc, char **argv)
{
    return client_cmd_dispatch("admin connectors", "  the HTTP connectors that serve functions",
                               argc, argv, connectors_subs,
                               sizeof connectors_subs / sizeof connectors_subs[0]);
}

/* ---------------------------------------------------------------- departments */

/* "finance  autonomous  ad-hoc runs: no" */
static void admin_print_department(const struct json_node *d)
{
    client_cmd_put(stdout, d, "name", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, d, "autonomy", "?");
    const struct json_node *adhoc = json_get(d, "allow_adhoc");
    printf("  ad-hoc runs: %s\n", adhoc && adhoc->type == JSON_TRUE ? "yes" : "no");
}

static void admin_print_departments(const struct json_node *list)
{
    admin_print_each(list, admin_print_department, "no departments");
}

static const char departments_list_usage[] =
        "usage: airlock admin departments list [--json]\n"
        "  every department with its policy\n" CLIENT_CMD_EXIT_HELP;
static const char departments_patch_usage[] =
        "usage: airlock admin departments patch NAME --name NEW [--json]\n"
        "  renames a department: its templates, connectors, mounts, grants and runs follow it\n"
        "  (admin)\n" CLIENT_CMD_EXIT_HELP;
static const char departments_delete_usage[] =
        "usage: airlock admin departments delete NAME [--json]\n"
        "  deletes an empty department (no template, connector, mount, grant, run or\n"
        "  snapshot names it; admin)\n" CLIENT_CMD_EXIT_HELP;

static int departments_list(int argc, char **argv)
{
    int json = 0;
    int rc = admin_args("admin departments list", departments_list_usage, argc, argv, &json, NULL,
                        0);
    return rc >= 0 ? rc
                   : client_cmd_request("admin departments list", "GET", "/v1/departments", NULL,
                                        json, admin_print_departments);
}

static int departments_patch(int argc, char **argv)
{
    const char *what = "admin departments patch";
    const char *name = NULL, *pos[1];
    int json = 0;
    const struct client_cmd_opt opts[] = { { "--name", &name, NULL }, { "--json", NULL, &json } };
    int a = client_cmd_args(what, departments_patch_usage, argc, argv, opts, 2, pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (!name) {
        cli_error("%s: nothing to change: give --name NEW", what);
        return CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "name", pos[0]) != 0 || client_cmd_name(what, "--name", name) != 0) {
        return CLI_EXIT_USAGE;
    }
    struct buf body;
    char path[256];
    buf_init(&body, 1024);
    buf_append_str(&body, "{\"name\":");
    json_write_string(&body, name, strlen(name));
    buf_append_str(&body, "}");
    snprintf(path, sizeof path, "/v1/departments/%s", pos[0]);
    int rc = client_cmd_request(what, "PATCH", path, &body, json, admin_print_department);
    buf_done(&body);
    return rc;
}

static int departments_delete(int argc, char **argv)
{
    const char *what = "admin departments delete";
    int json = 0;
    const char *pos[1];
    char path[256];
    int rc = admin_args(what, departments_delete_usage, argc, argv, &json, pos, 1);
    if (rc >= 0) {
        return rc;
    }
    snprintf(path, sizeof path, "/v1/departments/%s", pos[0]);
    return client_cmd_request(what, "DELETE", path, NULL, json, admin_print_deleted);
}

static const struct client_cmd_sub departments_subs[] = {
    { "list", departments_list, "every department with its policy" },
    { "patch", departments_patch, "rename a department" },
    { "delete", departments_delete, "delete an empty department" },
};

static int admin_departments(int argc, char **argv)
{
    return client_cmd_dispatch("admin departments", "  departments on airlockd", argc, argv,
                               departments_subs,
                               sizeof departments_subs / sizeof departments_subs[0]);
}

static const struct client_cmd_sub admin_subs[] = {
    { "principals", admin_principals, "list, show, patch (identity, disable) and delete" },
    { "connectors", admin_connectors, "list, show, patch and delete" },
    { "departments", admin_departments, "list, patch (rename) and delete" },
};

int cmd_admin(int argc, char **argv)
{
    return client_cmd_dispatch("admin",
                               "  what an admin manages on airlockd ($AIRLOCK_URL, key "
                               "$AIRLOCK_KEY)",
                               argc, argv, admin_subs, sizeof admin_subs / sizeof admin_subs[0]);
}
