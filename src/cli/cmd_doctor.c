/*
 * cmd_doctor.c - `airlock doctor`: which protection layers hold on this machine. The worker is
 * started in report mode and applies its jail exactly as for a run. Exit 0 when the jail holds,
 * 1 when the seccomp filter cannot be applied (runs would then be refused unless
 * --unsafe-no-jail), 2 when the worker cannot be found or started.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_doctor(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: airlock doctor\n  reports each protection layer of the worker and "
                   "whether it is active on this machine\n");
            return 0;
        }
        cli_error("doctor: unexpected argument '%s'", argv[1]);
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
    printf("airlock %s\n", al_version());
    printf("process isolation: active (one airlock-worker process per run, own session, empty "
           "environment, no host descriptors)\n");
    fputs(report, stdout);
    if (jailed) {
        printf("jail: ok\n");
        return CLI_EXIT_COMPLETED;
    }
    printf("jail: NOT AVAILABLE - runs are refused unless --unsafe-no-jail is given\n");
    return CLI_EXIT_FAILED;
}
