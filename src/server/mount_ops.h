/*
 * mount_ops.h - the mount backend interface (struct al_mount_ops), as include/airlock.h
 * declares it once workspaces are in the public header; until then, the same declarations here.
 * The guard on AL_MOUNT_OPS_VERSION makes this file empty when airlock.h already has them.
 */
#ifndef AIRLOCK_SERVER_MOUNT_OPS_H
#define AIRLOCK_SERVER_MOUNT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#ifndef AL_MOUNT_OPS_VERSION
#define AL_MOUNT_OPS_VERSION 1
enum al_mount_status { AL_MOUNT_OK = 0, AL_MOUNT_NOT_FOUND = 1, AL_MOUNT_ERROR = 2 };
struct al_mount_entry {
    const char *name; /* one path segment */
    uint64_t size;
    int is_dir;
};
typedef void al_mount_list_fn(const struct al_mount_entry *entry, void *list_ud);
/* A mount's backend. `key` is the object key or relative path: the manifest entry's "prefix"
 * followed by the path below the entry (no leading '/'; a directory key "" is the prefix
 * itself). Every function may block (network). On AL_MOUNT_ERROR they write a message into err
 * (errlen bytes, NUL-terminated) that names no credential; the lib prefixes the mount's name. */
struct al_mount_ops {
    unsigned version; /* AL_MOUNT_OPS_VERSION */
    enum al_mount_status (*stat)(void *ud, const char *key, uint64_t *ret_size, int *ret_is_dir,
                                 char *err, size_t errlen);
    /* up to `len` bytes from `offset`; *ret is malloc'd, the lib free()s it */
    enum al_mount_status (*read)(void *ud, const char *key, uint64_t offset, uint64_t len,
                                 char **ret, size_t *ret_len, char *err, size_t errlen);
    /* the direct children of directory `key` */
    enum al_mount_status (*list)(void *ud, const char *key, al_mount_list_fn *each, void *list_ud,
                                 char *err, size_t errlen);
    /* NULL for a read-only backend; used only by al_workspace_commit */
    enum al_mount_status (*write)(void *ud, const char *key, const char *data, size_t len,
                                  char *err, size_t errlen);
    enum al_mount_status (*remove)(void *ud, const char *key, char *err, size_t errlen);
};
#endif

#endif
