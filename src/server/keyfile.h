/*
 * keyfile.h - airlockd's secret keys that live beside the database: raw random bytes kept as
 * hex in DATA_DIR/NAME (mode 0600, created on first start) unless an environment variable gives
 * them, so several nodes can share one key (docs/server.md).
 */
#ifndef AIRLOCK_SERVER_KEYFILE_H
#define AIRLOCK_SERVER_KEYFILE_H

#include <stddef.h>

#include "airlock.h"

#define KEYFILE_MAX      64 /* bytes of a key */
#define KEYFILE_KEEP_MAX 8  /* keys one file holds: the one in use, then older ones */

/* Fills ret with len (<= KEYFILE_MAX) bytes: from $env when set (2*len hex digits), else from
 * DATA_DIR/file, which is created with new random bytes when missing. 0, or -1 with reterr set
 * (AL_CONFIG_ERROR for a bad key, naming where it came from; AL_INTERNAL_ERROR when the file or
 * the random generator fails). */
int keyfile_load(const char *data_dir, const char *file, const char *env, size_t len,
                 unsigned char *ret, struct al_error *reterr);

/* The keys after the first line of DATA_DIR/file (a rotated key file: the key in use first,
 * then the ones it replaced, newest first), each len bytes, at most max of them into ret (max *
 * len bytes); *ret_n how many. None when the file has one line or does not exist, or when $env
 * gives the key in use (older keys then come from the environment's owner, not the file). 0, or
 * -1 with reterr set (AL_CONFIG_ERROR naming the file for a line that is not a key). */
int keyfile_load_previous(const char *data_dir, const char *file, const char *env, size_t len,
                          unsigned char *ret, size_t max, size_t *ret_n, struct al_error *reterr);

/* A key file whole, as airlockd reads it at start and on SIGHUP: the key in use, the ones it
 * replaced, and the key staged to replace it next. */
struct keyfile_ring {
    size_t len;                                         /* bytes of each key */
    unsigned char keys[KEYFILE_KEEP_MAX * KEYFILE_MAX]; /* key i at keys + i * len: 0 in use,
                                                           then older ones */
    size_t n;
    unsigned char next[KEYFILE_MAX]; /* when has_next: DATA_DIR/file.next */
    int has_next;
};

/* keyfile_load and keyfile_load_previous into ret, and DATA_DIR/file.next when it exists (written
 * by `airlockd keys rotate --prepare`, or by a rotation under way; never made here), $env does
 * not give the key and it is none of the file's keys. 0, or -1 with reterr set. */
int keyfile_load_ring(const char *data_dir, const char *file, const char *env, size_t len,
                      struct keyfile_ring *ret, struct al_error *reterr);

/* Replaces DATA_DIR/file by n keys of len bytes (keys[0] in use, then older ones), one per line
 * as hex, 0600: written to a temporary name, synced, renamed into place and the directory
 * synced, so a crash leaves the old file or the new one. 0, or -1 with reterr set. */
int keyfile_write(const char *data_dir, const char *file, const unsigned char *keys, size_t len,
                  size_t n, struct al_error *reterr);

/* len random bytes (len <= KEYFILE_MAX). 0, or -1 when the random generator fails. */
int keyfile_random(unsigned char *ret, size_t len);

/* Takes the data directory for this process: an exclusive lock (flock) on the directory, held
 * until the process ends or *ret_fd is closed. airlockd takes it at start; `airlockd keys`
 * refuses a directory a running airlockd holds. 0 with *ret_fd; 1 when another process holds
 * it; -1 with reterr set when the directory cannot be opened. */
int keyfile_lock(const char *data_dir, int *ret_fd, struct al_error *reterr);

#endif
