/*
 * cli.h - the airlock command: a command table (main.c), `airlock run` (cmd_run.c) and the two
 * kinds of host functions the command line can grant: one process per call (host_exec.c) and
 * one co-process per run speaking JSON lines (host_process.c). Beside them: term.c (guest text
 * made safe for a terminal), suggest.c ("did you mean"), child_env.c (what those processes
 * inherit: never the continuation secrets). `airlock audit verify` (cmd_audit.c) checks an
 * audit export offline. client.c is the command as airlockd's client (client.h); template,
 * runs, approvals and admin (cmd_<group>.c) and `audit export` are built on it with client_cmd.c,
 * and `airlock mcp` (cmd_mcp.c) is the MCP stdio transport in front of airlockd's POST /v1/mcp.
 */
#ifndef AIRLOCK_CLI_H
#define AIRLOCK_CLI_H

#include <stddef.h>

#include "airlock.h"

#define CLI_EXIT_COMPLETED   0
#define CLI_EXIT_FAILED      1
#define CLI_EXIT_USAGE       2
#define CLI_EXIT_INTERRUPTED 3

/* An exec host exits with this (EX_TEMPFAIL) to interrupt the run; stdout is the payload. */
#define EXEC_EXIT_INTERRUPT 75

int cmd_run(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_types(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_approvals(int argc, char **argv);
int cmd_admin(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

/* Prints "airlock: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct buf;
/* Appends {"interruptionId":...,"payload":...,"resolution":...} for a re-invoked interrupted
 * call: 1; 0 (nothing appended) for an ordinary call; -1 when out of memory. */
int cli_resume_json(const struct al_call *call, struct buf *b);

/* host_exec.c: `--host NAME=exec:COMMAND`. */
struct exec_host;
struct exec_host *exec_host_new(const char *command, size_t output_limit);
void exec_host_free(struct exec_host *h);
al_host_fn exec_host_call;
/* Kills every command still running (the run ended without waiting for them) and waits for
 * their call threads to finish, so the hosts can be freed. */
void exec_host_kill_all(void);

/* modules_dir.c: `--modules DIR`, the run's module loader. */
struct modules_dir;
struct modules_dir *modules_dir_new(const char *dir, size_t source_limit);
void modules_dir_free(struct modules_dir *m);
/* The root's real path (the loader's identity: continuations are bound to it). */
const char *modules_dir_root(const struct modules_dir *m);
al_host_fn modules_dir_resolve;
al_host_fn modules_dir_load;

/* host_process.c: `--host-process COMMAND`. */
struct host_process;
/* Starts the co-process and reads its declaration line, waiting at most timeout_ms.
 * On failure prints a clear message and returns NULL. */
struct host_process *host_process_start(const char *command, unsigned timeout_ms);
/* Registers every declared function on `config`. -1 (message printed) on a bad name. */
int host_process_register(struct host_process *hp, struct al_config *config);
/* Closes its stdin and reaps it, killing it after a short grace. Returns the error message of
 * a failure seen during the run (it died with calls pending, printed garbage), else NULL; the
 * string lives until host_process_free. */
const char *host_process_finish(struct host_process *hp);
void host_process_free(struct host_process *hp);

#endif
