/*
 * suggest.h - the closest known name to a mistyped one, for "did you mean" messages.
 */
#ifndef AIRLOCK_CLI_SUGGEST_H
#define AIRLOCK_CLI_SUGGEST_H

#include <stddef.h>

/* The entry of names[0..count) closest to the given_len bytes at `given` (edit distance, a
 * swap of neighbours counting as one edit), or NULL when none is close: at most 2 edits and
 * fewer than half the longer name. The first of equally close names wins. */
const char *suggest_closest(const char *given, size_t given_len, const char *const *names,
                            size_t count);

#endif
