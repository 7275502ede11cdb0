/*
 * mounts.h - the storage a workspace manifest may name (docs/server.md "Mounts"): a local
 * directory under one of airlockd's mounts.local_roots, or an S3-compatible bucket whose secret
 * access key airlockd keeps sealed (secretbox.h, context "mount/NAME/secret_access_key"). The
 * routes are api_mounts.c's; this is what the rest of airlockd uses: the roots a local path must
 * lie under, and a mount looked up by name for a run's workspace, its secret opened for use in
 * this process only - never for an answer, a log line, the audit log, the journal or a guest.
 */
#ifndef AIRLOCK_SERVER_MOUNTS_H
#define AIRLOCK_SERVER_MOUNTS_H

#include <limits.h>
#include <stddef.h>

#include "secretbox.h"
#include "store.h"

#define MOUNTS_ROOTS_MAX 16
#define MOUNTS_WHY_MAX   256

/* The config's mounts.local_roots, each resolved (realpath) when airlockd starts. n 0: no local
 * mount may be registered or used. */
struct mounts_roots {
    size_t n;
    char dirs[MOUNTS_ROOTS_MAX][PATH_MAX];
};

/* Adds `dir` to roots: it must be an absolute path of an existing directory; it is kept
 * resolved. 0, or -1 with why (MOUNTS_WHY_MAX bytes) set. */
int mounts_roots_add(struct mounts_roots *roots, const char *dir, char *why);

/* A local mount's path: absolute and normalized (no ".", "..", empty segment or trailing '/'),
 * an existing directory, and once resolved (symlinks followed) under one of roots (NULL reads
 * as none). 0 with the resolved path in ret_path; -1 with why (naming the path, never anything
 * else). */
int mounts_local_resolve(const struct mounts_roots *roots, const char *path,
                         char ret_path[PATH_MAX], char *why);

/* A mount as a run's workspace uses it. Strings are malloc'd (NULL: not of this kind). */
struct mounts_mount {
    char name[STORE_NAME_MAX + 1];
    char department[STORE_NAME_MAX + 1];
    int s3;     /* 0: kind local (path), 1: kind s3 (endpoint .. secret_access_key) */
    char *path; /* resolved, checked again against the roots at lookup */
    char *endpoint;
    char *bucket;
    char *region;
    char *access_key_id;
    char *secret_access_key; /* opened: in-process use only; cleansed by mounts_mount_done */
    size_t secret_access_key_len;
};

/* Looks mount `name` up on s and opens its secret with `keys`: STORE_OK with *ret filled (free
 * it with mounts_mount_done, also on failure), STORE_NOT_FOUND when there is no such mount,
 * STORE_ERROR with why set when the store failed, the secret does not open, or a local mount's
 * path is no longer under `roots` (the config changed, or a symlink on the way now leads out). */
enum store_rc mounts_lookup(struct store *s, struct secretbox_keys *keys,
                            const struct mounts_roots *roots, const char *name,
                            struct mounts_mount *ret, char *why);
/* Frees m's strings (the secret cleansed first) and zeroes it; NULL-safe. */
void mounts_mount_done(struct mounts_mount *m);

#endif
