/*
 * child_env.h - the environment given to host commands and co-processes.
 */
#ifndef AIRLOCK_CLI_CHILD_ENV_H
#define AIRLOCK_CLI_CHILD_ENV_H

#include <stddef.h>

/* A NULL-terminated copy of environ's pointers without AIRLOCK_CONTINUATION_* (the
 * continuation secrets), AIRLOCK_FUNCTION and AIRLOCK_RESUME, followed by the `nextra` strings
 * of `extra` ("NAME=value", borrowed). Free with child_env_free (the strings stay owned by
 * their owners). NULL when out of memory. */
char **child_env_new(char *const *extra, size_t nextra);
void child_env_free(char **envp);

#endif
