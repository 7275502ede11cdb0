/*
 * cmd_runs.c - `airlock runs start|fork|show|list|cancel`: runs on airlockd (POST /v1/runs,
 * POST /v1/runs/{id}/fork, GET /v1/runs[/{id}], POST /v1/runs/{id}/cancel; docs/server.md
 * "Runs"). The exit status of
 * start and show is the run's: 0 completed (or still running), 1 failed, cancelled or denied,
 * 3 waiting for a person - so a script can tell a run that needs a decision from one that
 * broke. A run's value, console and error are the guest's text: shown through term.c.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "client_cmd.h"
#include "json.h"
#include "term.h"

#define RUNS_INPUT_MAX ((size_t)8 << 20)

static const char *const statuses[] = {
    "queued", "running", "awaiting_approval", "completed", "failed", "cancelled", "denied", NULL,
};
static const char *const languages[] = { "js", "ts", NULL };

/* The exit status a run's status stands for. */
static int run_exit(const struct json_node *run)
{
    const char *st = client_cmd_str(run, "status");
    if (!st) {
        return CLI_EXIT_FAILED;
    }
    if (strcmp(st, "awaiting_approval") == 0) {
        return CLI_EXIT_INTERRUPTED;
    }
    if (strcmp(st, "completed") == 0 || strcmp(st, "running") == 0 || strcmp(st, "queued") == 0) {
        return CLI_EXIT_COMPLETED;
    }
    return CLI_EXIT_FAILED;
}

static void put_template(const struct json_node *run)
{
    const struct json_node *t = json_get(run, "template");
    if (t && t->type == JSON_STRING) {
        term_write(stdout, t->str, t->str_len);
        fputs(" v", stdout);
        client_cmd_put(stdout, run, "version", "?");
    } else {
        fputs("ad-hoc", stdout);
    }
}

/* The approvals a waiting run waits for. The run object lists its approval ids newest first;
 * the pending ones are the newest, one per interrupted call not yet called again (a resumed
 * call keeps its number), or the newest alone when no call waits (a supervised run's start). */
static void print_waiting(const struct json_node *run)
{
    const struct json_node *calls = json_get(run, "host_calls");
    const struct json_node *ids = json_get(run, "approvals");
    const struct json_node *waiting[64];
    size_t nwaiting = 0;
    for (const struct json_node *c = calls && calls->type == JSON_ARRAY ? calls->child : NULL; c;
         c = c->next) {
        const char *outcome = client_cmd_str(c, "outcome");
        const struct json_node *num = json_get(c, "call");
        if (!outcome || !num) {
            continue;
        }
        /* a later entry of the same call: it was decided and called again */
        for (size_t i = 0; i < nwaiting; i++) {
            const struct json_node *w = json_get(waiting[i], "call");
            if (w && w->num == num->num) {
                memmove(&waiting[i], &waiting[i + 1], (nwaiting - i - 1) * sizeof waiting[0]);
                nwaiting--;
                break;
            }
        }
        if (strcmp(outcome, "interrupted") == 0 && nwaiting < 64) {
            waiting[nwaiting++] = c;
        }
    }
    size_t nids = ids && ids->type == JSON_ARRAY ? ids->count : 0;
    size_t pending = nwaiting ? nwaiting : 1;
    if (pending > nids) {
        pending = nids;
    }
    printf("waits for a person: %zu approval%s\n", pending, pending == 1 ? "" : "s");
    /* the newest `pending` ids, oldest first: the order the calls were made in */
    const struct json_node *id = ids && ids->type == JSON_ARRAY ? ids->child : NULL;
    const struct json_node *newest[64];
    for (size_t i = 0; i < pending && i < 64 && id; i++, id = id->next) {
        newest[i] = id;
    }
    for (size_t i = 0; i < pending && i < 64; i++) {
        const struct json_node *a = newest[pending - 1 - i];
        fputs("  ", stdout);
        if (a->type == JSON_STRING) {
            term_write(stdout, a->str, a->str_len);
        }
        if (nwaiting && i < nwaiting) {
            fputs("  ", stdout);
            client_cmd_put_call(stdout, waiting[i]);
        } else if (!nwaiting) {
            fputs("  the start of the run (supervised)", stdout);
        }
        fputc('\n', stdout);
    }
    fputs("decide with: airlock approvals approve|deny ID\n", stdout);
}

static void print_run(const struct json_node *run)
{
    const char *st = client_cmd_str(run, "status");
    client_cmd_put(stdout, run, "id", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, run, "status", "?");
    fputs("  ", stdout);
    put_template(run);
    fputs("  by ", stdout);
    client_cmd_put(stdout, run, "principal", "?");
    const struct json_node *stats = json_get(run, "stats");
    if (stats && json_get(stats, "wall_ms")) {
        fputs("  ", stdout);
        client_cmd_put(stdout, stats, "wall_ms", "?");
        fputs(" ms", stdout);
    }
    fputc('\n', stdout);
    if (client_cmd_str(run, "forked_from")) {
        fputs("forked from ", stdout);
        client_cmd_put(stdout, run, "forked_from", "?");
        fputs(" at call ", stdout);
        client_cmd_put(stdout, run, "at_call", "?");
        fputc('\n', stdout);
    }
    const struct json_node *console = json_get(run, "console");
    if (console && console->type == JSON_ARRAY && console->count) {
        fputs("console:\n", stdout);
        for (const struct json_node *l = console->child; l; l = l->next) {
            fputs("  ", stdout);
            client_cmd_put(stdout, l, "level", "log");
            fputs(": ", stdout);
            client_cmd_put(stdout, l, "text", "");
            fputc('\n', stdout);
        }
    }
    const struct json_node *value = json_get(run, "value");
    const struct json_node *error = json_get(run, "error");
    if (st && strcmp(st, "completed") == 0 && value) {
        fputs("value:\n", stdout);
        if (term_write_pretty(stdout, value->raw, value->raw_len) != 0) {
            cli_error("out of memory printing the value");
        }
    } else if (error && error->type == JSON_OBJECT) {
        fputs("error: ", stdout);
        client_cmd_put(stdout, error, "code", "?");
        fputs(": ", stdout);
        const char *name = client_cmd_str(error, "name");
        if (name && name[0]) {
            term_write(stdout, name, strlen(name));
            fputs(": ", stdout);
        }
        client_cmd_put(stdout, error, "message", "");
        fputc('\n', stdout);
        const char *stack = client_cmd_str(error, "stack");
        if (stack && stack[0]) {
            term_write(stdout, stack, strlen(stack));
            fputc('\n', stdout);
        }
    }
    if (st && strcmp(st, "awaiting_approval") == 0) {
        print_waiting(run);
    } else if (st && (strcmp(st, "running") == 0 || strcmp(st, "queued") == 0)) {
        fputs("still running: see `airlock runs show ", stdout);
        client_cmd_put(stdout, run, "id", "RUN");
        fputs("`\n", stdout);
    }
}

/* Shows one run answer and returns its exit status. */
static int show_run(const char *what, int json, const struct buf *answer)
{
    struct json_doc *doc = NULL;
    if (client_cmd_parse(what, answer, &doc) != 0) {
        return CLI_EXIT_FAILED;
    }
    if (json) {
        client_cmd_print_answer(what, answer); /* parsed above: JSON */
    } else {
        print_run(json_root(doc));
    }
    int rc = run_exit(json_root(doc));
    json_doc_free(doc);
    return rc;
}

/* Ends a start's body begun in `body` (the input, the wait) and posts it to `path`, waiting as
 * long as the run takes unless timeout_s; shows the run answered. The exit status. */
static int post_run(const char *what, const char *path, struct buf *body, const struct buf *in,
                    int no_wait, long long timeout_s, int json)
{
    if (in->data) {
        buf_append_str(body, ",\"input\":");
        buf_append(body, in->data, in->len);
    }
    if (no_wait) {
        buf_append_str(body, ",\"wait\":false");
    }
    if (buf_append_str(body, "}") != BUF_OK) {
        cli_error("%s: the run is too large to send", what);
        return CLI_EXIT_USAGE;
    }
    struct client c = { 0 };
    struct buf answer;
    long status;
    int rc = client_cmd_open(&c, what);
    if (rc != 0) {
        return rc;
    }
    buf_init(&answer, CLIENT_ANSWER_MAX);
    /* a run may wait for its connectors as long as its limits allow: no deadline of ours */
    c.timeout_s = (long)timeout_s;
    rc = client_cmd_call(&c, what, "POST", path, body, &answer, &status);
    if (rc == 0) {
        rc = show_run(what, json, &answer);
    }
    buf_done(&answer);
    client_close(&c);
    return rc;
}

/* ------------------------------------------------------------------------------- start */

static const char start_usage[] =
        "usage: airlock runs start TEMPLATE [--version N] [--input JSON | --input-file FILE]\n"
        "           [--no-wait] [--timeout SECONDS] [--json]\n"
        "       airlock runs start --source FILE --department D [--functions F1,F2]\n"
        "           [--language js|ts] [--input JSON | --input-file FILE] [--no-wait] [--json]\n"
        "  runs an approved version of TEMPLATE (default: the newest), or ad-hoc source where\n"
        "  the department allows it, and waits until it ends or waits for a person\n"
        "  --input        the run's input, a JSON object (--input-file FILE, - for stdin)\n"
        "  --no-wait      answer once airlockd has accepted the run (then see `runs show`)\n"
        "  --timeout      give up waiting for airlockd after SECONDS (default: "
        "never)\n" CLIENT_CMD_EXIT_HELP;

static int runs_start(int argc, char **argv)
{
    const char *what = "runs start";
    const char *version = NULL, *input = NULL, *input_file = NULL, *source_file = NULL;
    const char *dept = NULL, *functions = NULL, *language = NULL, *timeout = NULL, *pos[1];
    int no_wait = 0, json = 0;
    const struct client_cmd_opt opts[] = {
        { "--version", &version, NULL },       { "--input", &input, NULL },
        { "--input-file", &input_file, NULL }, { "--no-wait", NULL, &no_wait },
        { "--source", &source_file, NULL },    { "--department", &dept, NULL },
        { "--functions", &functions, NULL },   { "--language", &language, NULL },
        { "--timeout", &timeout, NULL },       { "--json", NULL, &json },
    };
    struct buf in, source, body;
    long long version_n = 0, timeout_s = 0;
    int rc = CLI_EXIT_USAGE;
    buf_init(&in, RUNS_INPUT_MAX);
    buf_init(&source, RUNS_INPUT_MAX);
    buf_init(&body, 4 * RUNS_INPUT_MAX);
    int a = client_cmd_args(what, start_usage, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            0, 1);
    if (a != 0) {
        rc = a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    if (!pos[0] == !source_file) {
        cli_error("%s: name a TEMPLATE or give --source FILE (one of them)", what);
        goto out;
    }
    if (pos[0] && (dept || functions || language)) {
        cli_error("%s: --department, --functions and --language are for --source runs; a "
                  "template's version has its own",
                  what);
        goto out;
    }
    if (source_file && (!dept || version)) {
        cli_error("%s: --source needs --department D (and takes no --version)", what);
        goto out;
    }
    if (input && input_file) {
        cli_error("%s: give --input or --input-file, not both", what);
        goto out;
    }
    if ((pos[0] && client_cmd_name(what, "template name", pos[0]) != 0) ||
        (version && client_cmd_number(what, "--version", version, 1LL << 40, &version_n) != 0) ||
        (timeout && client_cmd_number(what, "--timeout", timeout, 1LL << 30, &timeout_s) != 0) ||
        (language && client_cmd_choice(what, "--language", language, languages) != 0)) {
        goto out;
    }
    if (input) {
        buf_append_str(&in, input);
    } else if (input_file && client_cmd_read_file(what, input_file, &in) != 0) {
        goto out;
    }
    if (in.data &&
        client_cmd_json_object(what, input ? "--input" : input_file, in.data, in.len) != 0) {
        goto out;
    }
    buf_append_str(&body, "{");
    if (pos[0]) {
        buf_append_str(&body, "\"template\":");
        json_write_string(&body, pos[0], strlen(pos[0]));
        if (version) {
            buf_printf(&body, ",\"version\":%lld", version_n);
        }
    } else {
        if (client_cmd_read_file(what, source_file, &source) != 0) {
            goto out;
        }
        size_t n = strlen(source_file);
        if (!language) {
            language = (n > 3 && strcmp(source_file + n - 3, ".ts") == 0) ? "ts" : "js";
        }
        buf_append_str(&body, "\"source\":");
        json_write_string(&body, source.data, source.len);
        buf_append_str(&body, ",\"department\":");
        json_write_string(&body, dept, strlen(dept));
        buf_append_str(&body, ",\"language\":");
        json_write_string(&body, language, strlen(language));
        if (functions) {
            buf_append_str(&body, ",\"functions\":");
            if (client_cmd_json_list(what, "--functions", functions, &body) != 0) {
                goto out;
            }
        }
    }
    rc = post_run(what, "/v1/runs", &body, &in, no_wait, timeout_s, json);
out:
    buf_done(&in);
    buf_done(&source);
    buf_done(&body);
    return rc;
}

/* -------------------------------------------------------------------------------- fork */

static const char fork_usage[] =
        "usage: airlock runs fork RUN --at-call N [--input JSON | --input-file FILE]\n"
        "           [--no-wait] [--timeout SECONDS] [--json]\n"
        "  a new run of RUN's approved version whose calls before N are answered from RUN's\n"
        "  journal and whose call N onwards run live (\"try again from step N\")\n"
        "  --at-call      the first call made live (1 runs everything again)\n"
        "  --input        the new run's input, a JSON object (default: RUN's; --input-file FILE,\n"
        "                 - for stdin); an input that changes the calls before N is refused\n"
        "  --no-wait      answer once airlockd has accepted the run (then see `runs show`)\n"
        "  --timeout      give up waiting for airlockd after SECONDS (default: "
        "never)\n" CLIENT_CMD_EXIT_HELP;

static int runs_fork(int argc, char **argv)
{
    const char *what = "runs fork";
    const char *at_call = NULL, *input = NULL, *input_file = NULL, *timeout = NULL, *pos[1];
    int no_wait = 0, json = 0;
    const struct client_cmd_opt opts[] = {
        { "--at-call", &at_call, NULL },       { "--input", &input, NULL },
        { "--input-file", &input_file, NULL }, { "--no-wait", NULL, &no_wait },
        { "--timeout", &timeout, NULL },       { "--json", NULL, &json },
    };
    struct buf in, body;
    long long at = 0, timeout_s = 0;
    char path[512];
    int rc = CLI_EXIT_USAGE;
    buf_init(&in, RUNS_INPUT_MAX);
    buf_init(&body, 2 * RUNS_INPUT_MAX);
    int a = client_cmd_args(what, fork_usage, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            1, 1);
    if (a != 0) {
        rc = a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    if (!at_call) {
        cli_error("%s: --at-call N is needed (the first call made live)", what);
        goto out;
    }
    if (input && input_file) {
        cli_error("%s: give --input or --input-file, not both", what);
        goto out;
    }
    if (client_cmd_name(what, "run id", pos[0]) != 0 ||
        client_cmd_number(what, "--at-call", at_call, 1LL << 31, &at) != 0 ||
        (timeout && client_cmd_number(what, "--timeout", timeout, 1LL << 30, &timeout_s) != 0)) {
        goto out;
    }
    if (input) {
        buf_append_str(&in, input);
    } else if (input_file && client_cmd_read_file(what, input_file, &in) != 0) {
        goto out;
    }
    if (in.data &&
        client_cmd_json_object(what, input ? "--input" : input_file, in.data, in.len) != 0) {
        goto out;
    }
    buf_printf(&body, "{\"at_call\":%lld", at);
    snprintf(path, sizeof path, "/v1/runs/%s/fork", pos[0]);
    rc = post_run(what, path, &body, &in, no_wait, timeout_s, json);
out:
    buf_done(&in);
    buf_done(&body);
    return rc;
}

/* ------------------------------------------------------------------------- show, cancel */

static const char show_usage[] = "usage: airlock runs show RUN [--json]\n"
                                 "  a run: its status, value or error, console, and what it waits "
                                 "for\n" CLIENT_CMD_EXIT_HELP;
static const char cancel_usage[] = "usage: airlock runs cancel RUN [--json]\n"
                                   "  cancels a running or waiting run (who started it, an "
                                   "approver, an admin)\n" CLIENT_CMD_EXIT_HELP;

static int runs_one(int argc, char **argv, const char *what, const char *usage, const char *method,
                    const char *suffix)
{
    const char *pos[1];
    int json = 0;
    const struct client_cmd_opt opts[] = { { "--json", NULL, &json } };
    int a = client_cmd_args(what, usage, argc, argv, opts, 1, pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "run id", pos[0]) != 0) {
        return CLI_EXIT_USAGE;
    }
    struct client c;
    int rc = client_cmd_open(&c, what);
    if (rc != 0) {
        return rc;
    }
    struct buf body, answer;
    long status;
    char path[512];
    buf_init(&body, 16);
    buf_init(&answer, CLIENT_ANSWER_MAX);
    buf_append_str(&body, "{}");
    snprintf(path, sizeof path, "/v1/runs/%s%s", pos[0], suffix);
    rc = client_cmd_call(&c, what, method, path, suffix[0] ? &body : NULL, &answer, &status);
    if (rc == 0) {
        rc = show_run(what, json, &answer);
        /* a cancel that was done is a success, whatever the run's status now says */
        if (suffix[0] && rc == CLI_EXIT_FAILED) {
            rc = CLI_EXIT_COMPLETED;
        }
    }
    buf_done(&body);
    buf_done(&answer);
    client_close(&c);
    return rc;
}

static int runs_show(int argc, char **argv)
{
    return runs_one(argc, argv, "runs show", show_usage, "GET", "");
}

static int runs_cancel(int argc, char **argv)
{
    return runs_one(argc, argv, "runs cancel", cancel_usage, "POST", "/cancel");
}

/* -------------------------------------------------------------------------------- list */

static const char list_usage[] =
        "usage: airlock runs list [--template T] [--status S] [--principal P] [--after RUN|TIME]\n"
        "           [--limit N] [--json]\n"
        "  the runs you may see, oldest first (at most N, default 100, up to 1000); --after\n"
        "  the last id of a page gives the next. S: queued, running, awaiting_approval,\n"
        "  completed, failed, cancelled, denied\n" CLIENT_CMD_EXIT_HELP;

static void print_runs(const struct json_node *list)
{
    if (list->type != JSON_ARRAY || list->count == 0) {
        fputs("no runs\n", stdout);
        return;
    }
    printf("%-37s %-18s %-24s %-16s %s\n", "ID", "STATUS", "TEMPLATE", "PRINCIPAL", "CREATED");
    for (const struct json_node *r = list->child; r; r = r->next) {
        char tpl[160];
        const char *t = client_cmd_str(r, "template");
        const struct json_node *v = json_get(r, "version");
        if (t && v && v->type == JSON_NUMBER) {
            snprintf(tpl, sizeof tpl, "%.128s v%.0f", t, v->num);
        } else {
            snprintf(tpl, sizeof tpl, "ad-hoc");
        }
        const char *id = client_cmd_str(r, "id");
        const char *st = client_cmd_str(r, "status");
        const char *who = client_cmd_str(r, "principal");
        const char *created = client_cmd_str(r, "created");
        client_cmd_cell(stdout, id ? id : "?", 37);
        fputc(' ', stdout);
        client_cmd_cell(stdout, st ? st : "?", 18);
        fputc(' ', stdout);
        client_cmd_cell(stdout, tpl, 24);
        fputc(' ', stdout);
        client_cmd_cell(stdout, who ? who : "?", 16);
        fputc(' ', stdout);
        client_cmd_cell(stdout, created ? created : "", 0);
        fputc('\n', stdout);
    }
}

static int runs_list(int argc, char **argv)
{
    const char *what = "runs list";
    const char *tpl = NULL, *status_f = NULL, *principal = NULL, *after = NULL, *limit = NULL;
    int json = 0;
    long long limit_n = 0;
    const struct client_cmd_opt opts[] = {
        { "--template", &tpl, NULL },        { "--status", &status_f, NULL },
        { "--principal", &principal, NULL }, { "--after", &after, NULL },
        { "--limit", &limit, NULL },         { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, list_usage, argc, argv, opts, sizeof opts / sizeof opts[0], NULL,
                            0, 0);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if ((status_f && client_cmd_choice(what, "--status", status_f, statuses) != 0) ||
        (limit && client_cmd_number(what, "--limit", limit, 1000, &limit_n) != 0) ||
        (tpl && client_cmd_name(what, "template name", tpl) != 0) ||
        (principal && client_cmd_name(what, "principal name", principal) != 0)) {
        return CLI_EXIT_USAGE;
    }
    char path[2048] = "/v1/runs";
    if ((tpl && client_cmd_query(path, sizeof path, "template", tpl) != 0) ||
        (status_f && client_cmd_query(path, sizeof path, "status", status_f) != 0) ||
        (principal && client_cmd_query(path, sizeof path, "principal", principal) != 0) ||
        (after && client_cmd_query(path, sizeof path, "after", after) != 0) ||
        (limit && client_cmd_query(path, sizeof path, "limit", limit) != 0)) {
        cli_error("%s: the filters are too long", what);
        return CLI_EXIT_USAGE;
    }
    return client_cmd_request(what, "GET", path, NULL, json, print_runs);
}

static const struct client_cmd_sub runs_subs[] = {
    { "start", runs_start, "start a run of an approved template version (agent)" },
    { "fork", runs_fork, "a new run from a run's journal, live from call N" },
    { "show", runs_show, "a run's status, value or error, and what it waits for" },
    { "list", runs_list, "the runs you may see, with filters" },
    { "cancel", runs_cancel, "cancel a running or waiting run" },
};

int cmd_runs(int argc, char **argv)
{
    return client_cmd_dispatch("runs", "  runs on airlockd ($AIRLOCK_URL, key $AIRLOCK_KEY)", argc,
                               argv, runs_subs, sizeof runs_subs / sizeof runs_subs[0]);
}
