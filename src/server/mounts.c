/*
 * mounts.c - the roots a local mount must lie under, and a mount looked up for a run (mounts.h).
 * A local path is judged after realpath: a path that reads as under a root but goes out through
 * a symlink, or a root that is itself a link, is decided on where it really leads. The path is
 * resolved again at every lookup, since links and the config can change after registration.
 * The opened secret lives in memory this module cleanses on release; nothing here logs.
 */
#include "mounts.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"

/* Absolute, no empty, "." or ".." segment, no trailing '/', no NUL before its end. */
static int mounts_normalized(const char *path)
{
    size_t len = strlen(path);
    if (len < 2 || path[0] != '/' || path[len - 1] == '/' || len >= PATH_MAX) {
        return 0;
    }
    for (const char *seg = path + 1; seg;) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            return 0;
        }
        seg = slash ? slash + 1 : NULL;
    }
    return 1;
}

/* The resolved directory `path`: 0 with ret, or -1 (errno). */
static int mounts_resolve_dir(const char *path, char ret[PATH_MAX])
{
    struct stat st;
    if (!realpath(path, ret) || stat(ret, &st) != 0) {
        return -1;
    }
    return S_ISDIR(st.st_mode) ? 0 : -1;
}

int mounts_roots_add(struct mounts_roots *roots, const char *dir, char *why)
{
    if (roots->n == MOUNTS_ROOTS_MAX) {
        snprintf(why, MOUNTS_WHY_MAX, "at most %d local roots", MOUNTS_ROOTS_MAX);
        return -1;
    }
    if (dir[0] != '/' || mounts_resolve_dir(dir, roots->dirs[roots->n]) != 0) {
        snprintf(why, MOUNTS_WHY_MAX,
                 "local root \"%.160s\" is not an absolute path of a directory", dir);
        return -1;
    }
    roots->n++;
    return 0;
}

/* 1 when resolved path p is root r or below it. */
static int mounts_under(const char *p, const char *r)
{
    size_t n = strlen(r);
    if (strcmp(r, "/") == 0) {
        return 1;
    }
    return strncmp(p, r, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int mounts_local_resolve(const struct mounts_roots *roots, const char *path,
                         char ret_path[PATH_MAX], char *why)
{
    char resolved[PATH_MAX];
    if (!mounts_normalized(path)) {
        snprintf(why, MOUNTS_WHY_MAX,
                 "path \"%.160s\" must be absolute and normalized (no \".\", \"..\", \"//\" or "
                 "trailing \"/\")",
                 path);
        return -1;
    }
    if (!roots || roots->n == 0) {
        snprintf(why, MOUNTS_WHY_MAX,
                 "no local mounts: airlockd's config lists no mounts.local_roots");
        return -1;
    }
    if (mounts_resolve_dir(path, resolved) != 0) {
        snprintf(why, MOUNTS_WHY_MAX, "path \"%.160s\" is not an existing directory", path);
        return -1;
    }
    for (size_t i = 0; i < roots->n; i++) {
        if (mounts_under(resolved, roots->dirs[i])) {
            memcpy(ret_path, resolved, strlen(resolved) + 1);
            return 0;
        }
    }
    snprintf(why, MOUNTS_WHY_MAX,
             "path \"%.160s\" does not lie under one of airlockd's mounts.local_roots", path);
    return -1;
}

struct mounts_found {
    struct mounts_mount *m;
    char *sealed;
    int found;
    int oom;
};

static char *mounts_dup(const char *s, int *oom)
{
    char *d = s ? buf_dup(s, strlen(s)) : NULL;
    if (s && !d) {
        *oom = 1;
    }
    return d;
}

static int mounts_found_read(void *userdata, const struct store_mount *row)
{
    struct mounts_found *f = userdata;
    struct mounts_mount *m = f->m;
    f->found = 1;
    snprintf(m->name, sizeof m->name, "%s", row->name);
    snprintf(m->department, sizeof m->department, "%s", row->department);
    m->s3 = strcmp(row->kind, "s3") == 0;
    m->path = mounts_dup(row->path, &f->oom);
    m->endpoint = mounts_dup(row->endpoint, &f->oom);
    m->bucket = mounts_dup(row->bucket, &f->oom);
    m->region = mounts_dup(row->region, &f->oom);
    m->access_key_id = mounts_dup(row->access_key_id, &f->oom);
    f->sealed = mounts_dup(row->secret_sealed, &f->oom);
    return 0;
}

enum store_rc mounts_lookup(struct store *s, struct secretbox_keys *keys,
                            const struct mounts_roots *roots, const char *name,
                            struct mounts_mount *ret, char *why)
{
    struct mounts_found f = { ret, NULL, 0, 0 };
    char context[STORE_NAME_MAX + 64];
    char resolved[PATH_MAX];
    memset(ret, 0, sizeof *ret);
    enum store_rc rc = s->ops->mount_get(s, name, mounts_found_read, &f);
    if (rc == STORE_OK && !f.found) {
        rc = STORE_NOT_FOUND;
    }
    if (rc != STORE_OK) {
        snprintf(why, MOUNTS_WHY_MAX, rc == STORE_NOT_FOUND ? "no mount %.64s" : "the store failed",
                 name);
        goto out;
    }
    if (f.oom) {
        snprintf(why, MOUNTS_WHY_MAX, "out of memory");
        rc = STORE_ERROR;
        goto out;
    }
    if (ret->s3) {
        snprintf(context, sizeof context, "mount/%s/secret_access_key", ret->name);
        if (!keys || !f.sealed ||
            secretbox_keys_open(keys, context, f.sealed, &ret->secret_access_key,
                                &ret->secret_access_key_len) != 0) {
            snprintf(why, MOUNTS_WHY_MAX,
                     "mount %s: its secret does not open with this server's secret keys",
                     ret->name);
            rc = STORE_ERROR;
        }
    } else if (!ret->path || mounts_local_resolve(roots, ret->path, resolved, why) != 0) {
        char inner[MOUNTS_WHY_MAX];
        memcpy(inner, why, sizeof inner);
        snprintf(why, MOUNTS_WHY_MAX, "mount %s: %.180s", ret->name, ret->path ? inner : "no path");
        rc = STORE_ERROR;
    } else if (strcmp(resolved, ret->path) != 0) {
        /* a directory on the way was replaced by a link since registration */
        snprintf(why, MOUNTS_WHY_MAX, "mount %s: its path now resolves elsewhere", ret->name);
        rc = STORE_ERROR;
    }
out:
    free(f.sealed);
    return rc;
}

void mounts_mount_done(struct mounts_mount *m)
{
    if (!m) {
        return;
    }
    if (m->secret_access_key) {
        OPENSSL_cleanse(m->secret_access_key, m->secret_access_key_len);
    }
    free(m->secret_access_key);
    free(m->path);
    free(m->endpoint);
    free(m->bucket);
    free(m->region);
    free(m->access_key_id);
    memset(m, 0, sizeof *m);
}
