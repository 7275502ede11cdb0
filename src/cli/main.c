/*
 * main.c - the airlock command line: a table of subcommands. Each subcommand parses its own
 * options and returns the process exit status (0 completed, 1 failed, 2 usage/configuration,
 * 3 interrupted: a run waits for a decision).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client_cmd.h"
#include "suggest.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("airlock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("airlock %s\n", al_version());
    return 0;
}

static int cmd_help(int argc, char **argv);

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    { "run", cmd_run, "run a JavaScript file in a sandboxed worker" },
    { "doctor", cmd_doctor, "show which protection layers are active on this machine" },
    { "audit", cmd_audit, "export airlockd's audit log, or verify an export offline" },
    { "types", cmd_types, "TypeScript declarations of a template version, from airlockd" },
    { "template", cmd_template,
      "create, push, submit, approve, revoke, diff templates on airlockd" },
    { "runs", cmd_runs, "start, show, list and cancel runs on airlockd" },
    { "approvals", cmd_approvals, "list, approve and deny approvals on airlockd" },
    { "admin", cmd_admin, "manage principals, connectors and departments on airlockd" },
    { "mcp", cmd_mcp, "the MCP stdio transport for airlockd's tools (AIRLOCK_URL, AIRLOCK_KEY)" },
    { "version", cmd_version, "print the version" },
    { "help", cmd_help, "show this help" },
};

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("usage: airlock COMMAND [OPTIONS]\n       airlock --version | -V\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        printf("  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    printf("\n`airlock COMMAND --help` describes a command. The commands that talk to airlockd\n"
           "(types, template, runs, approvals, admin, audit export) read its address from\n"
           "AIRLOCK_URL and the caller's key from AIRLOCK_KEY. For them:\n%s",
           CLIENT_CMD_EXIT_HELP);
    return 0;
}

int main(int argc, char **argv)
{
    /* A host command that exits without reading its stdin must fail that call, not kill us.
     * Commands we start get the default disposition back (POSIX_SPAWN_SETSIGDEF). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    if (argc < 2) {
        cmd_help(0, NULL);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        return cmd_help(0, NULL);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        return cmd_version(0, NULL);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            return commands[i].fn(argc - 1, argv + 1);
        }
    }
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        names[i] = commands[i].name;
    }
    size_t n = sizeof names / sizeof names[0];
    const char *best = suggest_closest(argv[1], strlen(argv[1]), names, n);
    if (best) {
        cli_error("unknown command '%s'; did you mean '%s'? (see `airlock help`)", argv[1], best);
    } else {
        cli_error("unknown command '%s' (see `airlock help`)", argv[1]);
    }
    return CLI_EXIT_USAGE;
}
