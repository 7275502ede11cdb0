/*
 * child_env.c - the environment of every process the command starts (exec hosts and the
 * co-process): ours, minus what must never leave airlock. The continuation secrets sign the
 * tokens that carry approvals; a host command that could read them (`--host h.env=exec:env`,
 * and through its answer, the guest) could forge a continuation with any resolution. So every
 * AIRLOCK_CONTINUATION_* variable is removed, as are AIRLOCK_FUNCTION and AIRLOCK_RESUME,
 * which airlock sets itself for the call they describe.
 */
#include "child_env.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

static int withheld(const char *var)
{
    static const char *const prefixes[] = { "AIRLOCK_CONTINUATION_",
                                            "AIRLOCK_FUNCTION=", "AIRLOCK_RESUME=" };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        if (strncmp(var, prefixes[i], strlen(prefixes[i])) == 0) {
            return 1;
        }
    }
    return 0;
}

char **child_env_new(char *const *extra, size_t nextra)
{
    size_t n = 0;
    while (environ[n]) {
        n++;
    }
    char **envp = calloc(n + nextra + 1, sizeof *envp);
    if (!envp) {
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!withheld(environ[i])) {
            envp[k++] = environ[i];
        }
    }
    for (size_t i = 0; i < nextra; i++) {
        envp[k++] = extra[i];
    }
    return envp;
}

void child_env_free(char **envp)
{
    free(envp);
}
