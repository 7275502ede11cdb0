/*
 * cmd_template.c - `airlock template create|push|submit|approve|reject|revoke|diff|list|show`:
 * a template's lifecycle through airlockd's routes (/v1/templates, docs/server.md "Templates
 * and versions"). The rules - four eyes, the states a move may leave - are the server's: this
 * file sends what the user gave and shows the answer, or the refusal with its code.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "client_cmd.h"
#include "json.h"
#include "term.h"

#define TEMPLATE_SOURCE_MAX ((size_t)8 << 20) /* the server refuses past 256 KiB; say it there */

static const char *const languages[] = { "js", "ts", NULL };
static const char *const autonomies[] = { "autonomous", "supervised", NULL };

/* "refund-small v1  approved  sha256:..." and who moved it last. */
static void print_version(const struct json_node *v)
{
    const char *state = client_cmd_str(v, "state");
    client_cmd_put(stdout, v, "template", "?");
    fputs(" v", stdout);
    client_cmd_put(stdout, v, "version", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, v, "state", "?");
    fputs("  ", stdout);
    client_cmd_put(stdout, v, "digest", "");
    fputc('\n', stdout);
    static const struct {
        const char *state, *by, *text, *label;
    } moves[] = {
        { "submitted", "submitted_by", NULL, "submitted by" },
        { "approved", "approved_by", "approve_comment", "approved by" },
        { "rejected", "rejected_by", "reject_comment", "rejected by" },
        { "revoked", "revoked_by", "revoke_reason", "revoked by" },
    };
    for (size_t i = 0; state && i < sizeof moves / sizeof moves[0]; i++) {
        const char *by = client_cmd_str(v, moves[i].by);
        if (strcmp(state, moves[i].state) != 0 || !by) {
            continue;
        }
        printf("  %s ", moves[i].label);
        term_write(stdout, by, strlen(by));
        const char *text = moves[i].text ? client_cmd_str(v, moves[i].text) : NULL;
        if (text && text[0]) {
            fputs(": ", stdout);
            term_write(stdout, text, strlen(text));
        }
        fputc('\n', stdout);
    }
}

/* Prints the answer: as sent (--json) or through `print`. */
static int show_answer(const char *what, int json, const struct buf *answer,
                       void (*print)(const struct json_node *))
{
    struct json_doc *doc = NULL;
    if (json) {
        return client_cmd_print_answer(what, answer);
    }
    if (client_cmd_parse(what, answer, &doc) != 0) {
        return CLI_EXIT_FAILED;
    }
    print(json_root(doc));
    json_doc_free(doc);
    return CLI_EXIT_COMPLETED;
}

/* ------------------------------------------------------------------------------ create */

static const char create_usage[] =
        "usage: airlock template create NAME --department D [--description TEXT] [--json]\n"
        "  creates the template NAME in department D (as its author: POST "
        "/v1/templates)\n" CLIENT_CMD_EXIT_HELP;

static void print_created(const struct json_node *t)
{
    fputs("template ", stdout);
    client_cmd_put(stdout, t, "name", "?");
    fputs(" created in department ", stdout);
    client_cmd_put(stdout, t, "department", "?");
    fputc('\n', stdout);
}

static int template_create(int argc, char **argv)
{
    const char *what = "template create";
    const char *dept = NULL, *description = NULL, *pos[1];
    int json = 0;
    const struct client_cmd_opt opts[] = {
        { "--department", &dept, NULL },
        { "--description", &description, NULL },
        { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, create_usage, argc, argv, opts, 3, pos, 1, 1);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (!dept) {
        cli_error("%s: --department is required (the department the template belongs to)", what);
        return CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "template name", pos[0]) != 0) {
        return CLI_EXIT_USAGE;
    }
    struct buf body;
    buf_init(&body, 1 << 20);
    buf_append_str(&body, "{\"name\":");
    json_write_string(&body, pos[0], strlen(pos[0]));
    buf_append_str(&body, ",\"department\":");
    json_write_string(&body, dept, strlen(dept));
    buf_append_str(&body, ",\"description\":");
    json_write_string(&body, description ? description : "", description ? strlen(description) : 0);
    buf_append_str(&body, "}");
    int rc = client_cmd_request(what, "POST", "/v1/templates", &body, json, print_created);
    buf_done(&body);
    return rc;
}

/* -------------------------------------------------------------------------------- push */

static const char push_usage[] =
        "usage: airlock template push NAME FILE [--language js|ts] [--functions F1,F2]\n"
        "           [--input-schema FILE] [--limits JSON] [--autonomy autonomous|supervised]\n"
        "           [--submit] [--json]\n"
        "  creates a new version of NAME from the source FILE (POST /v1/templates/NAME/versions)\n"
        "  and prints its number; --submit submits it for approval at once\n"
        "  --language      js or ts (default: ts for a .ts or .mts FILE, else js)\n"
        "  --functions     the connector functions it may call, e.g. shop.orders,shop.refund\n"
        "  --input-schema  a file with the JSON Schema its input must match\n"
        "  --limits        e.g. '{\"timeout_ms\":5000,\"host_calls\":3}'\n"
        "  --autonomy      supervised: each run waits for a person before it "
        "starts\n" CLIENT_CMD_EXIT_HELP;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

static int template_push(int argc, char **argv)
{
    const char *what = "template push";
    const char *language = NULL, *functions = NULL, *schema_file = NULL, *limits = NULL;
    const char *autonomy = NULL, *pos[2];
    int submit = 0, json = 0;
    const struct client_cmd_opt opts[] = {
        { "--language", &language, NULL },
        { "--functions", &functions, NULL },
        { "--input-schema", &schema_file, NULL },
        { "--limits", &limits, NULL },
        { "--autonomy", &autonomy, NULL },
        { "--submit", NULL, &submit },
        { "--json", NULL, &json },
    };
    struct buf source, schema, body, answer;
    struct json_doc *doc = NULL;
    struct client c = { 0 };
    long status;
    int rc = CLI_EXIT_USAGE;
    buf_init(&source, TEMPLATE_SOURCE_MAX);
    buf_init(&schema, TEMPLATE_SOURCE_MAX);
    buf_init(&body, 4 * TEMPLATE_SOURCE_MAX);
    buf_init(&answer, CLIENT_ANSWER_MAX);
    int a = client_cmd_args(what, push_usage, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            2, 2);
    if (a != 0) {
        rc = a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    if (!language) {
        language = ends_with(pos[1], ".ts") || ends_with(pos[1], ".mts") ? "ts" : "js";
    }
    if (client_cmd_name(what, "template name", pos[0]) != 0 ||
        client_cmd_choice(what, "--language", language, languages) != 0 ||
        (autonomy && client_cmd_choice(what, "--autonomy", autonomy, autonomies) != 0) ||
        (limits && client_cmd_json_object(what, "--limits", limits, strlen(limits)) != 0) ||
        client_cmd_read_file(what, pos[1], &source) != 0) {
        goto out;
    }
    if (schema_file && (client_cmd_read_file(what, schema_file, &schema) != 0 ||
                        client_cmd_json_object(what, schema_file, schema.data, schema.len) != 0)) {
        goto out;
    }
    buf_append_str(&body, "{\"source\":");
    json_write_string(&body, source.data, source.len);
    buf_append_str(&body, ",\"language\":");
    json_write_string(&body, language, strlen(language));
    if (functions) {
        buf_append_str(&body, ",\"functions\":");
        if (client_cmd_json_list(what, "--functions", functions, &body) != 0) {
            goto out;
        }
    }
    if (schema_file) {
        buf_append_str(&body, ",\"input_schema\":");
        buf_append(&body, schema.data, schema.len);
    }
    if (limits) {
        buf_append_str(&body, ",\"limits\":");
        buf_append_str(&body, limits);
    }
    if (autonomy) {
        buf_append_str(&body, ",\"autonomy\":");
        json_write_string(&body, autonomy, strlen(autonomy));
    }
    if (buf_append_str(&body, "}") != BUF_OK) {
        cli_error("%s: the version is too large to send", what);
        goto out;
    }
    rc = client_cmd_open(&c, what);
    if (rc != 0) {
        goto out;
    }
    char path[512];
    snprintf(path, sizeof path, "/v1/templates/%s/versions", pos[0]);
    rc = client_cmd_call(&c, what, "POST", path, &body, &answer, &status);
    if (rc != 0) {
        goto out;
    }
    if (submit) {
        if (client_cmd_parse(what, &answer, &doc) != 0) {
            rc = CLI_EXIT_FAILED;
            goto out;
        }
        const struct json_node *n = json_get(json_root(doc), "version");
        if (!n || n->type != JSON_NUMBER) {
            cli_error("%s: airlockd's answer names no version", what);
            rc = CLI_EXIT_FAILED;
            goto out;
        }
        snprintf(path, sizeof path, "/v1/templates/%s/versions/%.0f/submit", pos[0], n->num);
        buf_reset(&answer);
        buf_reset(&body);
        buf_append_str(&body, "{}");
        rc = client_cmd_call(&c, "template submit", "POST", path, &body, &answer, &status);
        if (rc != 0) {
            goto out;
        }
    }
    rc = show_answer(what, json, &answer, print_version);
out:
    json_doc_free(doc);
    buf_done(&source);
    buf_done(&schema);
    buf_done(&body);
    buf_done(&answer);
    client_close(&c);
    return rc;
}

/* ----------------------------------------------------- submit, approve, reject, revoke */

static const char submit_usage[] =
        "usage: airlock template submit NAME VERSION [--json]\n"
        "  submits a draft for approval (as its author)\n" CLIENT_CMD_EXIT_HELP;
static const char approve_usage[] =
        "usage: airlock template approve NAME VERSION [--comment TEXT] [--json]\n"
        "  approves a submitted version (an approver of the department, never its author):\n"
        "  from then on agents can run it\n" CLIENT_CMD_EXIT_HELP;
static const char reject_usage[] =
        "usage: airlock template reject NAME VERSION [--comment TEXT] [--json]\n"
        "  rejects a submitted version (an approver of the department)\n" CLIENT_CMD_EXIT_HELP;
static const char revoke_usage[] =
        "usage: airlock template revoke NAME VERSION [--reason TEXT] [--json]\n"
        "  revokes an approved version (an approver or an admin): new runs are refused, its\n"
        "  runs in progress and waiting runs are cancelled\n" CLIENT_CMD_EXIT_HELP;

/* One move: POST /v1/templates/NAME/versions/VERSION/<move> {"<field>": TEXT}. */
static int template_move(int argc, char **argv, const char *move, const char *usage,
                         const char *field)
{
    char what[64];
    char option[32];
    const char *text = NULL, *pos[2];
    int json = 0;
    long long version;
    snprintf(what, sizeof what, "template %s", move);
    snprintf(option, sizeof option, "--%s", field ? field : "");
    const struct client_cmd_opt opts[] = {
        { "--json", NULL, &json },
        { option, &text, NULL },
    };
    int a = client_cmd_args(what, usage, argc, argv, opts, field ? 2 : 1, pos, 2, 2);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "template name", pos[0]) != 0 ||
        client_cmd_number(what, "VERSION", pos[1], 1LL << 40, &version) != 0) {
        return CLI_EXIT_USAGE;
    }
    struct buf body;
    char path[512];
    buf_init(&body, 1 << 20);
    buf_append_str(&body, "{");
    if (text) {
        buf_printf(&body, "\"%s\":", field);
        json_write_string(&body, text, strlen(text));
    }
    buf_append_str(&body, "}");
    snprintf(path, sizeof path, "/v1/templates/%s/versions/%lld/%s", pos[0], version, move);
    int rc = client_cmd_request(what, "POST", path, &body, json, print_version);
    buf_done(&body);
    return rc;
}

static int template_submit(int argc, char **argv)
{
    return template_move(argc, argv, "submit", submit_usage, NULL);
}

static int template_approve(int argc, char **argv)
{
    return template_move(argc, argv, "approve", approve_usage, "comment");
}

static int template_reject(int argc, char **argv)
{
    return template_move(argc, argv, "reject", reject_usage, "comment");
}

static int template_revoke(int argc, char **argv)
{
    return template_move(argc, argv, "revoke", revoke_usage, "reason");
}

/* -------------------------------------------------------------------------------- diff */

static const char diff_usage[] =
        "usage: airlock template diff NAME VERSION [--from U] [--json]\n"
        "  what VERSION changes against the newest approved version before it (or U): its\n"
        "  functions, limits, input schema, autonomy, language, and its source as a unified\n"
        "  diff; then how VERSION replays against recent runs of the approved version (GET\n"
        "  .../replay; --json: its \"replay\" member, null when the caller may not read it)\n"
        "" CLIENT_CMD_EXIT_HELP;

static void print_names(const char *sign, const struct json_node *list)
{
    for (const struct json_node *n = list && list->type == JSON_ARRAY ? list->child : NULL; n;
         n = n->next) {
        if (n->type == JSON_STRING) {
            printf("  %s", sign);
            term_write(stdout, n->str, n->str_len);
            fputc('\n', stdout);
        }
    }
}

static void print_from_to(const char *label, const struct json_node *change)
{
    const struct json_node *from = json_get(change, "from");
    const struct json_node *to = json_get(change, "to");
    printf("%s: ", label);
    if (from) {
        client_cmd_put_json(stdout, from);
    }
    fputs(" -> ", stdout);
    if (to) {
        client_cmd_put_json(stdout, to);
    }
    fputc('\n', stdout);
}

static void print_diff(const struct json_node *d)
{
    const struct json_node *changes = json_get(d, "changes");
    const struct json_node *from = json_get(d, "from");
    client_cmd_put(stdout, d, "template", "?");
    fputs(" v", stdout);
    client_cmd_put(stdout, d, "version", "?");
    if (from && from->type == JSON_NUMBER) {
        fputs(" against v", stdout);
        client_cmd_put(stdout, d, "from", "?");
    } else {
        fputs(" against nothing (no approved version before it)", stdout);
    }
    fputc('\n', stdout);
    const struct json_node *fns = changes ? json_get(changes, "functions") : NULL;
    if (fns && ((json_get(fns, "added") && json_get(fns, "added")->count) ||
                (json_get(fns, "removed") && json_get(fns, "removed")->count))) {
        fputs("functions:\n", stdout);
        print_names("+ ", json_get(fns, "added"));
        print_names("- ", json_get(fns, "removed"));
    }
    const struct json_node *limits = changes ? json_get(changes, "limits") : NULL;
    for (const struct json_node *l = limits && limits->type == JSON_OBJECT ? limits->child : NULL;
         l; l = l->next) {
        char label[96];
        snprintf(label, sizeof label, "limits.%.80s", l->key);
        print_from_to(label, l);
    }
    const struct json_node *schema = changes ? json_get(changes, "input_schema") : NULL;
    const struct json_node *changed = schema ? json_get(schema, "changed") : NULL;
    if (changed && changed->type == JSON_TRUE) {
        print_from_to("input_schema", schema);
    }
    static const char *const moves[] = { "autonomy", "language" };
    for (size_t i = 0; i < 2; i++) {
        const struct json_node *m = changes ? json_get(changes, moves[i]) : NULL;
        if (m && m->type == JSON_OBJECT) {
            print_from_to(moves[i], m);
        }
    }
    const struct json_node *src = json_get(d, "source_diff");
    if (src && src->type == JSON_STRING && src->str_len) {
        term_write(stdout, src->str, src->str_len);
        if (src->str[src->str_len - 1] != '\n') {
            fputc('\n', stdout);
        }
    } else {
        fputs("source: unchanged\n", stdout);
    }
}

/* One side of a divergence: "shop.orders (args sha256 0123abcd...)", or "nothing". */
static void print_replay_call(const struct json_node *call)
{
    const char *fn = call ? client_cmd_str(call, "function") : NULL;
    const char *sha = call ? client_cmd_str(call, "args_sha256") : NULL;
    if (!fn) {
        fputs("nothing", stdout);
        return;
    }
    term_write(stdout, fn, strlen(fn));
    printf(" (args sha256 %.12s)", sha ? sha : "?");
}

/* The replay's summary, as the web UI words it: "replays 18 of 20 recent runs identically;
 * diverges on 2 at call 3", then a line per diverged or failed run. */
static void print_replay(const struct json_node *r)
{
    const struct json_node *runs = json_get(r, "runs");
    const struct json_node *same = json_get(r, "same");
    const struct json_node *div = json_get(r, "diverged");
    const struct json_node *failed = json_get(r, "failed");
    const char *state = client_cmd_str(r, "state");
    fputs("replay: ", stdout);
    if (state && strcmp(state, "running") == 0) {
        fputs("still running (ask again)\n", stdout);
        return;
    }
    if (state && strcmp(state, "superseded") == 0) {
        fputs("superseded (a newer version is submitted: only the newest is replayed)\n", stdout);
        return;
    }
    if (!runs || runs->type != JSON_NUMBER || !same || same->type != JSON_NUMBER) {
        fputs("none\n", stdout);
        return;
    }
    if (runs->num == 0) {
        const struct json_node *against = json_get(r, "against");
        fputs(against && against->type == JSON_NUMBER ? "no recent runs to replay\n"
                                                      : "nothing to replay (no approved version)\n",
              stdout);
        return;
    }
    printf("replays %.0f of %.0f recent runs of v", same->num, runs->num);
    client_cmd_put(stdout, r, "against", "?");
    fputs(" identically", stdout);
    size_t ndiv = div && div->type == JSON_ARRAY ? div->count : 0;
    size_t nfailed = failed && failed->type == JSON_ARRAY ? failed->count : 0;
    if (ndiv) {
        /* the distinct calls, in the order the runs are listed */
        double calls[8];
        size_t ncalls = 0;
        for (const struct json_node *d = div->child; d; d = d->next) {
            const struct json_node *at = json_get(d, "at_call");
            int seen = !at || at->type != JSON_NUMBER;
            for (size_t i = 0; i < ncalls && !seen; i++) {
                seen = calls[i] == at->num;
            }
            if (!seen && ncalls < sizeof calls / sizeof calls[0]) {
                calls[ncalls++] = at->num;
            }
        }
        printf("; diverges on %zu at call%s", ndiv, ncalls > 1 ? "s" : "");
        for (size_t i = 0; i < ncalls; i++) {
            printf("%s%.0f", i ? ", " : " ", calls[i]);
        }
    }
    if (nfailed) {
        printf("; fails on %zu", nfailed);
    }
    fputc('\n', stdout);
    for (const struct json_node *d = ndiv ? div->child : NULL; d; d = d->next) {
        fputs("  ", stdout);
        client_cmd_put(stdout, d, "run", "?");
        fputs(" diverges at call ", stdout);
        client_cmd_put(stdout, d, "at_call", "?");
        fputs(": expected ", stdout);
        print_replay_call(json_get(d, "expected"));
        fputs(", got ", stdout);
        print_replay_call(json_get(d, "got"));
        fputc('\n', stdout);
    }
    for (const struct json_node *f = nfailed ? failed->child : NULL; f; f = f->next) {
        const struct json_node *e = json_get(f, "error");
        fputs("  ", stdout);
        client_cmd_put(stdout, f, "run", "?");
        fputs(" fails: ", stdout);
        client_cmd_put(stdout, e, "code", "?");
        const struct json_node *same_as_run = e ? json_get(e, "same_as_run") : NULL;
        fputs(same_as_run && same_as_run->type == JSON_TRUE ? " (as the run did)\n"
                                                            : " (the run did not)\n",
              stdout);
    }
    const struct json_node *waiting = json_get(r, "waiting");
    for (const struct json_node *w = waiting && waiting->type == JSON_ARRAY ? waiting->child : NULL;
         w; w = w->next) {
        if (w->type == JSON_STRING) {
            fputs("  waiting run ", stdout);
            term_write(stdout, w->str, w->str_len);
            fputs(" would diverge\n", stdout);
        }
    }
}

/* The diff and the replay as one --json document: the diff's object with a "replay" member
 * (the replay's object, or null). -1 when the diff's answer is not an object. */
static int diff_with_replay(const struct buf *diff, const struct buf *replay, struct buf *out)
{
    size_t n = diff->data ? diff->len : 0;
    while (n > 0 && (diff->data[n - 1] == '\n' || diff->data[n - 1] == ' ')) {
        n--;
    }
    if (n < 2 || diff->data[n - 1] != '}') {
        return -1;
    }
    buf_append(out, diff->data, n - 1);
    buf_append_str(out, ",\"replay\":");
    if (replay && replay->data) {
        buf_append(out, replay->data, replay->len);
    } else {
        buf_append_str(out, "null");
    }
    buf_append_str(out, "}\n");
    return buf_failed(out) ? -1 : 0;
}

/* GET .../replay into *ret_replay when airlockd answers it (200, or 202 while it runs) with
 * JSON; 0 otherwise (the caller may not read it: an agent): the diff is shown without it. */
static int diff_replay(struct client *c, const char *name, long long version, struct buf *answer)
{
    char path[512];
    long status = 0;
    struct al_error err = { 0 };
    snprintf(path, sizeof path, "/v1/templates/%s/versions/%lld/replay", name, version);
    if (client_request(c, "GET", path, NULL, 0, answer, &status) != 0 ||
        (status != 200 && status != 202) || !answer->data ||
        json_check(answer->data, answer->len, CLIENT_ANSWER_DEPTH, &err) != AL_OK) {
        buf_reset(answer);
        return 0;
    }
    return 1;
}

static int template_diff(int argc, char **argv)
{
    const char *what = "template diff";
    const char *from = NULL, *pos[2];
    int json = 0;
    long long version, from_n = 0;
    const struct client_cmd_opt opts[] = {
        { "--from", &from, NULL },
        { "--json", NULL, &json },
    };
    int a = client_cmd_args(what, diff_usage, argc, argv, opts, 2, pos, 2, 2);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "template name", pos[0]) != 0 ||
        client_cmd_number(what, "VERSION", pos[1], 1LL << 40, &version) != 0 ||
        (from && client_cmd_number(what, "--from", from, 1LL << 40, &from_n) != 0)) {
        return CLI_EXIT_USAGE;
    }
    struct client c;
    int rc = client_cmd_open(&c, what);
    if (rc != 0) {
        return rc;
    }
    struct buf answer;
    long status;
    char path[512];
    buf_init(&answer, CLIENT_ANSWER_MAX);
    snprintf(path, sizeof path, "/v1/templates/%s/versions/%lld/diff", pos[0], version);
    if (from) {
        snprintf(path + strlen(path), sizeof path - strlen(path), "?from=%lld", from_n);
    }
    rc = client_cmd_call(&c, what, "GET", path, NULL, &answer, &status);
    struct buf replay;
    struct buf both;
    buf_init(&replay, CLIENT_ANSWER_MAX);
    buf_init(&both, 2 * CLIENT_ANSWER_MAX);
    int has_replay = rc == 0 && diff_replay(&c, pos[0], version, &replay);
    if (rc == 0 && json) {
        rc = diff_with_replay(&answer, has_replay ? &replay : NULL, &both) == 0
                     ? client_cmd_print_answer(what, &both)
                     : client_cmd_print_answer(what, &answer);
    } else if (rc == 0) {
        rc = show_answer(what, 0, &answer, print_diff);
        if (rc == 0 && has_replay) {
            rc = show_answer(what, 0, &replay, print_replay);
        }
    }
    buf_done(&both);
    buf_done(&replay);
    buf_done(&answer);
    client_close(&c);
    return rc;
}

/* ---------------------------------------------------------------------------- list, show */

static const char list_usage[] =
        "usage: airlock template list [--json]\n"
        "  the templates the caller may see, with their versions and states\n" CLIENT_CMD_EXIT_HELP;
static const char show_usage[] = "usage: airlock template show NAME [VERSION] [--json]\n"
                                 "  a template and its versions; with VERSION the whole version, "
                                 "source included\n" CLIENT_CMD_EXIT_HELP;

static void print_template(const struct json_node *t)
{
    client_cmd_put(stdout, t, "name", "?");
    fputs("  (", stdout);
    client_cmd_put(stdout, t, "department", "?");
    fputs(")  ", stdout);
    client_cmd_put(stdout, t, "description", "");
    fputc('\n', stdout);
    const struct json_node *versions = json_get(t, "versions");
    for (const struct json_node *v = versions && versions->type == JSON_ARRAY ? versions->child
                                                                              : NULL;
         v; v = v->next) {
        fputs("  v", stdout);
        client_cmd_put(stdout, v, "version", "?");
        fputs("  ", stdout);
        client_cmd_put(stdout, v, "state", "?");
        fputs("  by ", stdout);
        client_cmd_put(stdout, v, "author", "?");
        fputs("  ", stdout);
        client_cmd_put(stdout, v, "digest", "");
        fputc('\n', stdout);
    }
}

static void print_templates(const struct json_node *list)
{
    if (list->type != JSON_ARRAY || list->count == 0) {
        fputs("no templates\n", stdout);
        return;
    }
    for (const struct json_node *t = list->child; t; t = t->next) {
        print_template(t);
    }
}

static void print_whole_version(const struct json_node *v)
{
    print_version(v);
    static const char *const members[] = { "language", "autonomy", "functions", "limits",
                                           "input_schema" };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        const struct json_node *n = json_get(v, members[i]);
        if (n) {
            printf("%s: ", members[i]);
            client_cmd_put_json(stdout, n);
            fputc('\n', stdout);
        }
    }
    const struct json_node *src = json_get(v, "source");
    if (src && src->type == JSON_STRING) {
        fputs("source:\n", stdout);
        term_write(stdout, src->str, src->str_len);
        if (src->str_len && src->str[src->str_len - 1] != '\n') {
            fputc('\n', stdout);
        }
    }
}

static int template_list(int argc, char **argv)
{
    int json = 0;
    const struct client_cmd_opt opts[] = { { "--json", NULL, &json } };
    int a = client_cmd_args("template list", list_usage, argc, argv, opts, 1, NULL, 0, 0);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    return client_cmd_request("template list", "GET", "/v1/templates", NULL, json, print_templates);
}

static int template_show(int argc, char **argv)
{
    const char *what = "template show";
    const char *pos[2];
    int json = 0;
    long long version = 0;
    const struct client_cmd_opt opts[] = { { "--json", NULL, &json } };
    int a = client_cmd_args(what, show_usage, argc, argv, opts, 1, pos, 1, 2);
    if (a != 0) {
        return a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    if (client_cmd_name(what, "template name", pos[0]) != 0 ||
        (pos[1] && client_cmd_number(what, "VERSION", pos[1], 1LL << 40, &version) != 0)) {
        return CLI_EXIT_USAGE;
    }
    char path[512];
    if (version) {
        snprintf(path, sizeof path, "/v1/templates/%s/versions/%lld", pos[0], version);
        return client_cmd_request(what, "GET", path, NULL, json, print_whole_version);
    }
    snprintf(path, sizeof path, "/v1/templates/%s", pos[0]);
    return client_cmd_request(what, "GET", path, NULL, json, print_template);
}

static const struct client_cmd_sub template_subs[] = {
    { "create", template_create, "create a template in a department (author)" },
    { "push", template_push, "a new version from a source file (author); --submit" },
    { "submit", template_submit, "submit a draft version for approval (author)" },
    { "approve", template_approve, "approve a submitted version (approver, not its author)" },
    { "reject", template_reject, "reject a submitted version (approver)" },
    { "revoke", template_revoke, "revoke an approved version (approver or admin)" },
    { "diff", template_diff, "a version against the last approved one" },
    { "list", template_list, "the templates you may see" },
    { "show", template_show, "a template's versions, or one version with its source" },
};

int cmd_template(int argc, char **argv)
{
    return client_cmd_dispatch("template",
                               "  templates and their versions on airlockd ($AIRLOCK_URL, key "
                               "$AIRLOCK_KEY)",
                               argc, argv, template_subs,
                               sizeof template_subs / sizeof template_subs[0]);
}
