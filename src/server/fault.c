/*
 * fault.c - the crash points of test builds (fault.h): AIRLOCK_CRASH_AT is parsed once at the
 * start, before any thread exists, so that fault_point reads two plain variables from every
 * thread without a lock. Only built with AIRLOCK_FAULT_HOOKS; nothing here may ever reach a
 * Release binary.
 */
#include "fault.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fault_names[] = {
    [FAULT_BEFORE_MARK] = "before_mark",
    [FAULT_AFTER_SEND] = "after_send",
    [FAULT_AFTER_JOURNAL] = "after_journal",
    [FAULT_AFTER_DELIVERY] = "after_delivery",
};

static int fault_armed;
static enum fault_boundary fault_at;
static uint32_t fault_call;

int fault_init(void)
{
    const char *spec = getenv("AIRLOCK_CRASH_AT");
    if (!spec || !spec[0]) {
        return 0;
    }
    const char *colon = strchr(spec, ':');
    if (!colon) {
        return -1;
    }
    for (size_t i = 0; i < sizeof fault_names / sizeof fault_names[0]; i++) {
        if (strlen(fault_names[i]) != (size_t)(colon - spec) ||
            strncmp(fault_names[i], spec, (size_t)(colon - spec)) != 0) {
            continue;
        }
        char *end = NULL;
        unsigned long call = strtoul(colon + 1, &end, 10);
        if (colon[1] < '1' || colon[1] > '9' || *end != '\0' || call > UINT32_MAX) {
            return -1;
        }
        fault_at = (enum fault_boundary)i;
        fault_call = (uint32_t)call;
        fault_armed = 1;
        return 0;
    }
    return -1;
}

void fault_point(enum fault_boundary at, uint32_t call)
{
    if (!fault_armed || at != fault_at || call != fault_call) {
        return;
    }
    /* stderr is unbuffered: the line is out before the process is gone */
    fprintf(stderr, "{\"log\":\"fault\",\"crash_at\":\"%s:%" PRIu32 "\"}\n", fault_names[at], call);
    raise(SIGKILL);
}
