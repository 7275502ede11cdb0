/*
 * client_cmd.h - what the commands that talk to airlockd share (template, runs, approvals,
 * audit export): subcommand tables with "did you mean", options parsed from one table, the
 * request checked against its status, JSON built and read, and the answer printed - as the
 * server sent it with --json, or as short lines whose server and guest text goes through
 * term.c. One exit status table for all of them (CLIENT_CMD_EXIT_HELP).
 */
#ifndef AIRLOCK_CLI_CLIENT_CMD_H
#define AIRLOCK_CLI_CLIENT_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "buf.h"
#include "client.h"
#include "json.h"

/* The exit status of every client command, as its --help says it. */
#define CLIENT_CMD_EXIT_HELP                                                               \
    "exit status: 0 done (a run completed, or was accepted with --no-wait), 1 airlockd\n"  \
    "  refused (its error code on stderr), the run failed, was cancelled or denied, or\n"  \
    "  airlockd could not be reached, 2 usage error or AIRLOCK_URL/AIRLOCK_KEY missing,\n" \
    "  3 the run waits for a person (the approval ids are printed)\n"

struct client_cmd_sub {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *summary;
};

/* `airlock GROUP SUB ...`: runs the subcommand argv[1] of `subs`. No subcommand prints the
 * group's usage to stderr (exit 2), --help/-h to stdout (exit 0); an unknown one says which
 * name was meant, if one is close (suggest.c). Returns the exit status. */
int client_cmd_dispatch(const char *group, const char *intro, int argc, char **argv,
                        const struct client_cmd_sub *subs, size_t nsubs);

struct client_cmd_opt {
    const char *name;   /* "--department", "-o" */
    const char **value; /* an option with a value: where it goes (NULL: a flag) */
    int *flag;          /* a flag: set to 1 */
};

/* Parses argv[1..argc) of the command `what` ("template push"): options of `opts` (`--name
 * VALUE` or `--name=VALUE`; "--" ends them) and between min_pos and max_pos positional
 * arguments into pos[0..max_pos) (NULL past the last given). --help/-h prints `usage` to
 * stdout and returns 1; a mistake (unknown option, with "did you mean", a missing value, an
 * option given twice, too few or too many arguments) prints what was wrong and returns -1;
 * else 0. */
int client_cmd_args(const char *what, const char *usage, int argc, char **argv,
                    const struct client_cmd_opt *opts, size_t nopts, const char **pos,
                    size_t min_pos, size_t max_pos);

/* A positive integer argument up to `max`, else prints "WHAT: NAME must be ..." and -1. */
int client_cmd_number(const char *what, const char *name, const char *text, long long max,
                      long long *ret);
/* A name that may go into a path (client_segment_ok), else prints why and -1. */
int client_cmd_name(const char *what, const char *name, const char *text);
/* `text` is one of the NULL-terminated `choices`, else prints them and -1. */
int client_cmd_choice(const char *what, const char *name, const char *text,
                      const char *const *choices);
/* Reads a whole file ("-": stdin) into `out` (capped at its max), else prints why and -1. */
int client_cmd_read_file(const char *what, const char *path, struct buf *out);
/* Checks that `text` is a JSON object (an option's value or a file's content, named by
 * `name` in the message), else prints where it is not and -1. */
int client_cmd_json_object(const char *what, const char *name, const char *text, size_t len);
/* Appends a JSON array of the comma-separated names in `list` ("a.b,c.d"); -1 (message
 * printed) for an empty name. */
int client_cmd_json_list(const char *what, const char *name, const char *list, struct buf *b);
/* Appends "?key=value" (or "&key=value" once one is there) to a path, the value
 * percent-encoded; -1 when it would not fit in `size`. */
int client_cmd_query(char *path, size_t size, const char *key, const char *value);

/* Opens the client (exit 2 when AIRLOCK_URL or AIRLOCK_KEY is missing). 0 or the exit status. */
int client_cmd_open(struct client *c, const char *what);
/* Sends the request; 0 when airlockd answered 2xx (status in *ret_status), else prints the
 * refusal with its code (client_refused) or why airlockd was not reached and returns
 * CLI_EXIT_FAILED. `body` may be NULL. */
int client_cmd_call(struct client *c, const char *what, const char *method, const char *path,
                    const struct buf *body, struct buf *answer, long *ret_status);
/* Parses an answer as JSON into *ret_doc, else prints that it is not and -1. */
int client_cmd_parse(const char *what, const struct buf *answer, struct json_doc **ret_doc);

/* The answer as airlockd sent it, on stdout, ending with a newline (for --json). On a
 * terminal DEL and C1 controls inside its strings become \u escapes (the same JSON value).
 * 0, or CLI_EXIT_FAILED (nothing printed, why on stderr) for an answer that is not JSON:
 * --json promises one JSON document. */
int client_cmd_print_answer(const char *what, const struct buf *answer);

/* Shows an answer (not with --json): root is the parsed answer. */
typedef void client_cmd_print_fn(const struct json_node *root);

/* One request whose answer is shown: client_cmd_open, client_cmd_call (body NULL for none), then
 * with json the answer as it came (client_cmd_print_answer), else parsed and given to print
 * (NULL: nothing printed). The exit status: 0, client_cmd_call's, or CLI_EXIT_FAILED for an
 * answer that is not JSON. */
int client_cmd_request(const char *what, const char *method, const char *path,
                       const struct buf *body, int json, client_cmd_print_fn *print);

/* A member's string, or NULL when it is missing or not a string. */
const char *client_cmd_str(const struct json_node *obj, const char *key);
/* A member's text for display: its string, its JSON text for a number, `dash` otherwise. */
void client_cmd_put(FILE *f, const struct json_node *obj, const char *key, const char *dash);
/* `s` padded with spaces to `width` columns (counting bytes), through term_write. */
void client_cmd_cell(FILE *f, const char *s, int width);
/* A JSON node's text on one line, through term.c. */
void client_cmd_put_json(FILE *f, const struct json_node *n);
/* A host call as the guest wrote it: `function(args...)` from an object with "function" and
 * "args" (an approval, a run's host call), through term.c. */
void client_cmd_put_call(FILE *f, const struct json_node *obj);

#endif
