/*
 * client_cmd.c - the parts every airlockd client command shares (client_cmd.h), so that each
 * cmd_<group>.c holds only its routes and how it shows their answers. Everything airlockd or
 * a guest wrote that reaches readable output goes through term.c: a template's description, a
 * run's value or an approval's arguments could hold escape sequences that fake or hide what
 * airlock prints. --json output is the server's bytes (JSON escapes C0 controls itself).
 */
#include "client_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "suggest.h"
#include "term.h"

int client_cmd_dispatch(const char *group, const char *intro, int argc, char **argv,
                        const struct client_cmd_sub *subs, size_t nsubs)
{
    int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc < 2 || help) {
        FILE *f = help ? stdout : stderr;
        fprintf(f, "usage: airlock %s SUBCOMMAND [ARGS] [--json]\n%s\nsubcommands:\n", group,
                intro);
        for (size_t i = 0; i < nsubs; i++) {
            fprintf(f, "  %-9s %s\n", subs[i].name, subs[i].summary);
        }
        fprintf(f, "\n`airlock %s SUBCOMMAND --help` describes one.\n%s", group,
                CLIENT_CMD_EXIT_HELP);
        return help ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
    }
    const char *names[16];
    size_t n = 0;
    for (size_t i = 0; i < nsubs; i++) {
        if (strcmp(argv[1], subs[i].name) == 0) {
            return subs[i].fn(argc - 1, argv + 1);
        }
        if (n < sizeof names / sizeof names[0]) {
            names[n++] = subs[i].name;
        }
    }
    const char *best = suggest_closest(argv[1], strlen(argv[1]), names, n);
    if (best) {
        cli_error("%s: unknown subcommand '%s'; did you mean '%s'? (see `airlock %s --help`)",
                  group, argv[1], best, group);
    } else {
        cli_error("%s: unknown subcommand '%s' (see `airlock %s --help`)", group, argv[1], group);
    }
    return CLI_EXIT_USAGE;
}

static const struct client_cmd_opt *find_opt(const struct client_cmd_opt *opts, size_t nopts,
                                             const char *name, size_t len)
{
    for (size_t i = 0; i < nopts; i++) {
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) {
            return &opts[i];
        }
    }
    return NULL;
}

int client_cmd_args(const char *what, const char *usage, int argc, char **argv,
                    const struct client_cmd_opt *opts, size_t nopts, const char **pos,
                    size_t min_pos, size_t max_pos)
{
    size_t npos = 0;
    int options_done = 0;
    unsigned char seen[32] = { 0 };
    for (size_t i = 0; i < max_pos; i++) {
        pos[i] = NULL;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(usage, stdout);
            return 1;
        }
        if (!options_done && strcmp(a, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (options_done || a[0] != '-' || a[1] == '\0') {
            if (npos == max_pos) {
                cli_error("%s: unexpected argument '%s' (see `airlock %s --help`)", what, a, what);
                return -1;
            }
            pos[npos++] = a;
            continue;
        }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const struct client_cmd_opt *o = find_opt(opts, nopts, a, len);
        if (!o) {
            const char *names[32];
            size_t n = 0;
            for (size_t k = 0; k < nopts && n < sizeof names / sizeof names[0]; k++) {
                names[n++] = opts[k].name;
            }
            const char *best = suggest_closest(a, len, names, n);
            if (best) {
                cli_error("%s: unknown option '%.*s'; did you mean '%s'?", what, (int)len, a, best);
            } else {
                cli_error("%s: unknown option '%.*s' (see `airlock %s --help`)", what, (int)len, a,
                          what);
            }
            return -1;
        }
        size_t k = (size_t)(o - opts);
        if (k < sizeof seen && seen[k]) {
            cli_error("%s: %s is given twice", what, o->name);
            return -1;
        }
        if (k < sizeof seen) {
            seen[k] = 1;
        }
        if (!o->value) {
            if (eq) {
                cli_error("%s: %s takes no value", what, o->name);
                return -1;
            }
            *o->flag = 1;
            continue;
        }
        if (eq) {
            *o->value = eq + 1;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            cli_error("%s: %s needs a value (see `airlock %s --help`)", what, o->name, what);
            return -1;
        }
    }
    if (npos < min_pos) {
        cli_error("%s: missing arguments (see `airlock %s --help`)", what, what);
        return -1;
    }
    return 0;
}

int client_cmd_number(const char *what, const char *name, const char *text, long long max,
                      long long *ret)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end || errno || v < 1 || v > max) {
        cli_error("%s: %s must be a number from 1 to %lld, not '%s'", what, name, max, text);
        return -1;
    }
    *ret = v;
    return 0;
}

int client_cmd_name(const char *what, const char *name, const char *text)
{
    if (!client_segment_ok(text)) {
        cli_error("%s: '%s' is not a %s (1 to 128 letters, digits, '-', '_' or '.')", what, text,
                  name);
        return -1;
    }
    return 0;
}

int client_cmd_choice(const char *what, const char *name, const char *text,
                      const char *const *choices)
{
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; choices[i]; i++) {
        if (strcmp(text, choices[i]) == 0) {
            return 0;
        }
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", choices[i]);
        if (n > 0 && (size_t)n < sizeof list - used) {
            used += (size_t)n;
        }
    }
    cli_error("%s: %s must be one of %s, not '%s'", what, name, list, text);
    return -1;
}

int client_cmd_read_file(const char *what, const char *path, struct buf *out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    char chunk[65536];
    int rc = -1;
    if (!f) {
        cli_error("%s: cannot open %s: %s", what, path, strerror(errno));
        return -1;
    }
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (buf_append(out, chunk, n) != BUF_OK) {
            cli_error("%s: %s is larger than %zu bytes", what, path, out->max);
            goto out;
        }
    }
    if (ferror(f)) {
        cli_error("%s: cannot read %s: %s", what, path, strerror(errno));
        goto out;
    }
    if (buf_append(out, "", 0) != BUF_OK) {
        cli_error("out of memory");
        goto out;
    }
    rc = 0;
out:
    if (f != stdin) {
        fclose(f);
    }
    return rc;
}

int client_cmd_json_object(const char *what, const char *name, const char *text, size_t len)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    if (json_parse(text, len, 64, &doc, &err) != AL_OK) {
        cli_error("%s: %s is not JSON: %s", what, name, err.message);
        return -1;
    }
    int is_object = json_root(doc)->type == JSON_OBJECT;
    json_doc_free(doc);
    if (!is_object) {
        cli_error("%s: %s must be a JSON object ({...})", what, name);
        return -1;
    }
    return 0;
}

int client_cmd_json_list(const char *what, const char *name, const char *list, struct buf *b)
{
    buf_append_str(b, "[");
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            cli_error("%s: %s holds an empty name ('%s'); give them as a,b,c", what, name, list);
            return -1;
        }
        if (p != list) {
            buf_append_str(b, ",");
        }
        json_write_string(b, p, len);
        if (!comma) {
            break;
        }
        p = comma + 1;
    }
    return buf_append_str(b, "]") == BUF_OK ? 0 : -1;
}

int client_cmd_query(char *path, size_t size, const char *key, const char *value)
{
    size_t len = strlen(path);
    int n = snprintf(path + len, size - len, "%c%s=", strchr(path, '?') ? '&' : '?', key);
    if (n < 0 || (size_t)n >= size - len) {
        return -1;
    }
    len += (size_t)n;
    for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
        int plain = (*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
                    (*v >= '0' && *v <= '9') || strchr("-_.~", *v);
        if (len + 4 >= size) {
            return -1;
        }
        if (plain) {
            path[len++] = (char)*v;
        } else {
            snprintf(path + len, 4, "%%%02X", *v);
            len += 3;
        }
    }
    path[len] = '\0';
    return 0;
}

int client_cmd_open(struct client *c, const char *what)
{
    return client_open(c, what) == 0 ? 0 : CLI_EXIT_USAGE;
}

int client_cmd_call(struct client *c, const char *what, const char *method, const char *path,
                    const struct buf *body, struct buf *answer, long *ret_status)
{
    long status = 0;
    const char *data = body && body->data ? body->data : NULL;
    if (client_request(c, method, path, data, data ? body->len : 0, answer, &status) != 0) {
        return CLI_EXIT_FAILED;
    }
    if (status < 200 || status > 299) {
        client_refused(what, status, answer);
        return CLI_EXIT_FAILED;
    }
    *ret_status = status;
    return 0;
}

int client_cmd_parse(const char *what, const struct buf *answer, struct json_doc **ret_doc)
{
    struct al_error err = { 0 };
    if (!answer->data ||
        json_parse(answer->data, answer->len, CLIENT_ANSWER_DEPTH, ret_doc, &err) != AL_OK) {
        cli_error("%s: airlockd's answer is not JSON%s%s", what, answer->data ? ": " : "",
                  answer->data ? err.message : "");
        return -1;
    }
    return 0;
}

int client_cmd_print_answer(const char *what, const struct buf *answer)
{
    struct json_doc *doc = NULL;
    if (client_cmd_parse(what, answer, &doc) != 0) {
        return CLI_EXIT_FAILED;
    }
    json_doc_free(doc);
    if (isatty(STDOUT_FILENO)) {
        struct buf safe;
        buf_init(&safe, SIZE_MAX / 2);
        if (term_json_escape(&safe, answer->data, answer->len) == BUF_OK && safe.data) {
            fwrite(safe.data, 1, safe.len, stdout);
        }
        buf_done(&safe);
    } else {
        fwrite(answer->data, 1, answer->len, stdout);
    }
    if (answer->len == 0 || answer->data[answer->len - 1] != '\n') {
        fputc('\n', stdout);
    }
    return 0;
}

int client_cmd_request(const char *what, const char *method, const char *path,
                       const struct buf *body, int json, client_cmd_print_fn *print)
{
    struct client c;
    int rc = client_cmd_open(&c, what);
    if (rc != 0) {
        return rc;
    }
    struct buf answer;
    struct json_doc *doc = NULL;
    long status;
    buf_init(&answer, CLIENT_ANSWER_MAX);
    rc = client_cmd_call(&c, what, method, path, body, &answer, &status);
    if (rc == 0 && json) {
        rc = client_cmd_print_answer(what, &answer);
    } else if (rc == 0 && client_cmd_parse(what, &answer, &doc) != 0) {
        rc = CLI_EXIT_FAILED;
    } else if (rc == 0 && print) {
        print(json_root(doc));
    }
    json_doc_free(doc);
    buf_done(&answer);
    client_close(&c);
    return rc;
}

const char *client_cmd_str(const struct json_node *obj, const char *key)
{
    const struct json_node *n = obj ? json_get(obj, key) : NULL;
    return n && n->type == JSON_STRING ? n->str : NULL;
}

void client_cmd_put(FILE *f, const struct json_node *obj, const char *key, const char *dash)
{
    const struct json_node *n = obj ? json_get(obj, key) : NULL;
    if (n && n->type == JSON_STRING) {
        term_write(f, n->str, n->str_len);
    } else if (n && n->type == JSON_NUMBER) {
        fwrite(n->raw, 1, n->raw_len, f);
    } else {
        fputs(dash, f);
    }
}

void client_cmd_cell(FILE *f, const char *s, int width)
{
    size_t len = strlen(s);
    term_write(f, s, len);
    for (int i = (int)len; i < width; i++) {
        fputc(' ', f);
    }
}

void client_cmd_put_json(FILE *f, const struct json_node *n)
{
    term_write_json(f, n->raw, n->raw_len);
}

void client_cmd_put_call(FILE *f, const struct json_node *obj)
{
    const struct json_node *args = json_get(obj, "args");
    struct buf compact, safe;
    client_cmd_put(f, obj, "function", "?");
    fputc('(', f);
    buf_init(&compact, SIZE_MAX / 2);
    buf_init(&safe, SIZE_MAX / 2);
    /* the arguments without the array's brackets, as the guest wrote the call */
    if (args && args->type == JSON_ARRAY &&
        json_write_compact(&compact, args->raw, args->raw_len) == BUF_OK && compact.data &&
        term_json_escape(&safe, compact.data, compact.len) == BUF_OK && safe.data &&
        safe.len >= 2) {
        fwrite(safe.data + 1, 1, safe.len - 2, f);
    }
    fputc(')', f);
    buf_done(&compact);
    buf_done(&safe);
}
