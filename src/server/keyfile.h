/*
 * keyfile.h - airlockd's secret keys that live beside the database: raw random bytes kept as
 * hex in DATA_DIR/NAME (mode 0600, created on first start) unless an environment variable gives
 * them, so several nodes can share one key (docs/server.md).
 */
#ifndef AIRLOCK_SERVER_KEYFILE_H
#define AIRLOCK_SERVER_KEYFILE_H

#include <stddef.h>

#include "airlock.h"

#define KEYFILE_MAX 64 /* bytes of a key */

/* Fills ret with len (<= KEYFILE_MAX) bytes: from $env when set (2*len hex digits), else from
 * DATA_DIR/file, which is created with new random bytes when missing. 0, or -1 with reterr set
 * (AL_CONFIG_ERROR for a bad key, naming where it came from; AL_INTERNAL_ERROR when the file or
 * the random generator fails). */
int keyfile_load(const char *data_dir, const char *file, const char *env, size_t len,
                 unsigned char *ret, struct al_error *reterr);

#endif
