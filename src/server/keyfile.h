/*
 * keyfile.h - airlockd's secret keys that live beside the database: raw random bytes kept as
 * hex in DATA_DIR/NAME (mode 0600, created on first start) unless an environment variable gives
 * them, so several nodes can share one key (docs/server.md).
 */
#ifndef AIRLOCK_SERVER_KEYFILE_H
#define AIRLOCK_SERVER_KEYFILE_H

#include <stddef.h>

#define KEYFILE_MAX 64 /* bytes of a key */

/* Fills ret with len (<= KEYFILE_MAX) bytes: from $env when set (2*len hex digits), else from
 * DATA_DIR/file, which is created with new random bytes when missing. 0, or -1 with a message in
 * err (256 bytes) naming where the bad key came from. */
int keyfile_load(const char *data_dir, const char *file, const char *env, size_t len,
                 unsigned char *ret, char *err);

#endif
