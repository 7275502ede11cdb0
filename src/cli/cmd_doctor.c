/*
 * cmd_doctor.c - `airlock doctor [--json]`: which protection layers hold on this machine. The
 * worker is started in report mode and applies its jail exactly as for a run. Exit 0 when the
 * jail holds, 1 when the seccomp filter cannot be applied (runs would then be refused unless
 * --unsafe-no-jail), 2 when the worker cannot be found or started.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

static const char doctor_usage[] =
        "usage: airlock doctor [--json]\n"
        "  reports each protection layer of the worker and whether it is active on this machine\n"
        "  --json   print one JSON object on one line:\n"
        "    {\"version\":\"...\",\"layers\":{\"process isolation\":\"active (...)\",...,"
        "\"seccomp\":\"active (...)\",...},\"jail\":\"ok\"}\n"
        "    (\"jail\":\"not available\" when runs would be refused without --unsafe-no-jail)\n"
        "exit status: 0 the jail holds, 1 it does not, 2 the worker cannot be found or started\n";

static const char isolation[] = "active (one airlock-worker process per run, own session, empty "
                                "environment, no host descriptors)";

/* The worker's report is one "layer: state" line per layer; as JSON, one member each. */
static void print_json(const char *report, int jailed)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    buf_append_str(&b, "{\"version\":");
    json_write_string(&b, al_version(), strlen(al_version()));
    buf_append_str(&b, ",\"layers\":{\"process isolation\":");
    json_write_string(&b, isolation, strlen(isolation));
    for (const char *line = report; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (colon) {
            const char *state = colon + 1;
            while (state < line + len && *state == ' ') {
                state++;
            }
            buf_append_byte(&b, ',');
            json_write_string(&b, line, (size_t)(colon - line));
            buf_append_byte(&b, ':');
            json_write_string(&b, state, (size_t)(line + len - state));
        }
        line += len + (nl ? 1 : 0);
    }
    buf_printf(&b, "},\"jail\":\"%s\"}\n", jailed ? "ok" : "not available");
    if (b.data) {
        fwrite(b.data, 1, b.len, stdout);
    }
    buf_done(&b);
}

int cmd_doctor(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(doctor_usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        cli_error("doctor: unexpected argument '%s' (see `airlock doctor --help`)", argv[i]);
        return CLI_EXIT_USAGE;
    }
    struct al_config *config = al_config_new();
    char report[4096];
    int jailed = 0;
    struct al_error err;
    if (!config) {
        cli_error("out of memory");
        return CLI_EXIT_USAGE;
    }
    enum al_code rc = al_doctor(config, report, sizeof report, &jailed, &err);
    al_config_free(config);
    if (rc != AL_OK) {
        cli_error("doctor: %s", err.message);
        return CLI_EXIT_USAGE;
    }
    if (json) {
        print_json(report, jailed);
        return jailed ? CLI_EXIT_COMPLETED : CLI_EXIT_FAILED;
    }
    printf("airlock %s\n", al_version());
    printf("process isolation: %s\n", isolation);
    fputs(report, stdout);
    if (jailed) {
        printf("jail: ok\n");
        return CLI_EXIT_COMPLETED;
    }
    printf("jail: NOT AVAILABLE - runs are refused unless --unsafe-no-jail is given\n");
    return CLI_EXIT_FAILED;
}
