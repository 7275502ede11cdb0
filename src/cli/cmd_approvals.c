/*
 * cmd_approvals.c - `airlock approvals list|approve|deny`: the decisions a person makes on
 * airlockd (GET /v1/approvals, POST /v1/approvals/{id}/approve|deny; docs/server.md
 * "Approvals"): a supervised run's start, or one call of a sensitive function with its exact
 * arguments. The arguments are the guest's: shown through term.c. Four eyes is the server's
 * rule; its refusal is printed with its code.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "client_cmd.h"
#include "json.h"
#include "term.h"

static const char *const approval_statuses[] = { "pending",   "approved", "denied",
                                                 "cancelled", "all",      NULL };

static const char list_usage[] =
        "usage: airlock approvals list [--run RUN] [--status S] [--json]\n"
        "  the approvals of your departments, newest first; S is pending (the default),\n"
        "  approved, denied, cancelled or all\n" CLIENT_CMD_EXIT_HELP;

/* What the desk shows to inform a decision, when the approval carries it: each argument by its
 * name, the line of the source that made the call, and how long it has waited. */
static void print_informs(const struct json_node *a)
{
    const struct json_node *params = json_get(a, "params");
    for (const struct json_node *p = params && params->type == JSON_ARRAY ? params->child : NULL; p;
         p = p->next) {
        const struct json_node *value = json_get(p, "value");
        fputs("    ", stdout);
        client_cmd_put(stdout, p, "name", "?");
        fputs(": ", stdout);
        if (value) {
            client_cmd_put_json(stdout, value);
        }
        fputc('\n', stdout);
    }
    const struct json_node *src = json_get(a, "source_line");
    if (src && src->type == JSON_OBJECT) {
        fputs("    line ", stdout);
        client_cmd_put(stdout, src, "line", "?");
        fputs(": ", stdout);
        client_cmd_put(stdout, src, "text", "");
        fputc('\n', stdout);
    }
    const struct json_node *waiting = json_get(a, "waiting_ms");
    if (waiting && waiting->type == JSON_NUMBER && waiting->num >= 0 && waiting->num < 1e15) {
        long long s = (long long)waiting->num / 1000;
        printf("    waiting %lldd %02lldh %02lldm %02llds\n", s / 86400, s / 3600 % 24, s / 60 % 60,
               s % 60);
    }
}

/* "apr_...  pending  host_call  shop.refund("o-1",7)  run run_...  refund v1  by agent-7" */
static void print_approval(const struct json_node *a)
{
    client_cmd_put(stdout, a, "id", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, a, "status", "?");
    fputs("  ", stdout);
    const struct json_node *fn = json_get(a, "function");
    if (fn && fn->type == JSON_STRING) {
        client_cmd_put_call(stdout, a);
    } else {
        fputs("start of a supervised run", stdout);
    }
    fputs("\n    run ", stdout);
    client_cmd_put(stdout, a, "run", "?");
    fputs("  ", stdout);
    const struct json_node *t = json_get(a, "template");
    if (t && t->type == JSON_STRING) {
        term_write(stdout, t->str, t->str_len);
        fputs(" v", stdout);
        client_cmd_put(stdout, a, "version", "?");
    } else {
        fputs("ad-hoc", stdout);
    }
    fputs("  requested by ", stdout);
    client_cmd_put(stdout, a, "requested_by", "?");
    const char *by = client_cmd_str(a, "decided_by");
    if (by) {
        fputs("  decided by ", stdout);
        term_write(stdout, by, strlen(by));
        const char *comment = client_cmd_str(a, "comment");
        if (comment && comment[0]) {
            fputs(": ", stdout);
            term_write(stdout, comment, strlen(comment));
        }
    }
    fputc('\n', stdout);
    print_informs(a);
}

/* The --status of this command's one listing ("pending" ...; "all"), for what an empty one says:
 * the CLI lists once per process. */
static const char *listed_status = "pending";

static void print_approvals(const struct json_node *list)
{
    if (list->type != JSON_ARRAY || list->count == 0) {
        int all = strcmp(listed_status, "all") == 0;
        printf("no %s%sapprovals\n", all ? "" : listed_status, all ? "" : " ");
    }
    for (const struct json_node *n = list->type == JSON_ARRAY ? list->child : NULL; n;
         n = n->next) {
        print_approval(n);
    }
}

static int approvals_list(int argc, char **argv)
{
    const char *what = "approvals list";
    const char *run = NULL, *status_f = NULL;
    int json = 0;
    const struct client_cmd_opt opts[] = {
        { "--run", &run, NULL },
        { "--status", &status_f, NULL },
        { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, list_usage, argc, argv, opts, 3, NULL, 0, 0);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (!status_f) {
        status_f = "pending";
    }
    if (client_cmd_choice(what, "--status", status_f, approval_statuses) != 0 ||
        (run && client_cmd_name(what, "run id", run) != 0)) {
        return CLI_EXIT_USAGE;
    }
    char path[512] = "/v1/approvals";
    if (strcmp(status_f, "all") != 0) {
        client_cmd_query(path, sizeof path, "status", status_f);
    }
    if (run) {
        client_cmd_query(path, sizeof path, "run", run);
    }
    listed_status = status_f;
    return client_cmd_request(what, "GET", path, NULL, json, print_approvals);
}

static const char approve_usage[] =
        "usage: airlock approvals approve ID [--comment TEXT] [--json]\n"
        "  approves: the run starts, or the call goes to its connector (an approver of the\n"
        "  run's department, never the principal that started the run)\n" CLIENT_CMD_EXIT_HELP;
static const char deny_usage[] =
        "usage: airlock approvals deny ID [--comment TEXT] [--json]\n"
        "  denies: a supervised run ends denied; a denied call throws in the guest\n"
        "  (\"denied: TEXT\"), which may catch it and go on\n" CLIENT_CMD_EXIT_HELP;

static int approvals_decide(int argc, char **argv, const char *decision, const char *usage)
{
    char what[64];
    const char *comment = NULL, *pos[1];
    int json = 0;
    snprintf(what, sizeof what, "approvals %s", decision);
    const struct client_cmd_opt opts[] = {
        { "--comment", &comment, NULL },
        { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, usage, argc, argv, opts, 2, pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "approval id", pos[0]) != 0) {
        return CLI_EXIT_USAGE;
    }
    struct buf body;
    char path[512];
    buf_init(&body, 1 << 20);
    buf_append_str(&body, "{");
    if (comment) {
        buf_append_str(&body, "\"comment\":");
        json_write_string(&body, comment, strlen(comment));
    }
    buf_append_str(&body, "}");
    snprintf(path, sizeof path, "/v1/approvals/%s/%s", pos[0], decision);
    int rc = client_cmd_request(what, "POST", path, &body, json, print_approval);
    buf_done(&body);
    return rc;
}

static int approvals_approve(int argc, char **argv)
{
    return approvals_decide(argc, argv, "approve", approve_usage);
}

static int approvals_deny(int argc, char **argv)
{
    return approvals_decide(argc, argv, "deny", deny_usage);
}

static const struct client_cmd_sub approvals_subs[] = {
    { "list", approvals_list, "the approvals waiting for a decision (or all)" },
    { "approve", approvals_approve, "approve a run's start or a sensitive call" },
    { "deny", approvals_deny, "deny it" },
};

int cmd_approvals(int argc, char **argv)
{
    return client_cmd_dispatch("approvals",
                               "  the decisions people make on airlockd ($AIRLOCK_URL, key "
                               "$AIRLOCK_KEY)",
                               argc, argv, approvals_subs,
                               sizeof approvals_subs / sizeof approvals_subs[0]);
}
