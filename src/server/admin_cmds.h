/*
 * admin_cmds.h - airlockd's commands for operators that run and exit instead of serving:
 * `airlockd keys rotate continuation|audit|secret` and `airlockd backup` (docs/operations.md).
 */
#ifndef AIRLOCK_SERVER_ADMIN_CMDS_H
#define AIRLOCK_SERVER_ADMIN_CMDS_H

/* When argv[1] is `keys` or `backup`: runs it and returns its exit status (0 done, 1 failed, 2
 * usage error). -1 for any other argv: airlockd serves. */
int admin_cmds_run(int argc, char **argv);

#endif
