/*
 * store_file.c - the file-backed continuation store (al_store_file_new).
 *
 * One file per id in the store's directory, in one of two states told by its name:
 *   ID.cont      stored, claimable
 *   ID.claimed   claimed by one resume
 * A claim is rename(ID.cont -> ID.claimed): atomic, so of two racing resumes (threads or
 * processes) exactly one finds the file. consume unlinks the claimed file; release renames it
 * back. A file starts with its expiry (decimal ms since the epoch, then a newline); put writes
 * a temporary file, fsyncs it and renames it into place, so a reader never sees half a file.
 *
 * Whoever can write the directory can plant files in it, so it must be writable by its owner
 * alone, and a claimed file is opened without following a symbolic link and without waiting (a
 * FIFO would block the resume forever) and read only if it is a regular file. A file copied or
 * linked under another id is refused by the ledger: the signed body names its own id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "internal.h"

#define STORE_FILE_MAX (80u << 20) /* above any continuation the limits allow */

struct file_store {
    struct al_store base; /* first: the public handle points here */
    char *dir;
};

static int valid_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > AL_STORE_ID_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

static void path_of(const struct file_store *s, const char *id, const char *ext, char *out,
                    size_t cap)
{
    snprintf(out, cap, "%s/%s.%s", s->dir, id, ext);
}

static enum al_code bad_id(struct al_error *reterr)
{
    return error_set(reterr, AL_PROTOCOL_ERROR,
                     "not a stored continuation id (at most %d of A-Z a-z 0-9 _ -)",
                     AL_STORE_ID_MAX);
}

static enum al_code file_put(struct al_store *base, const char *id, const void *data, size_t len,
                             int64_t expires_ms, struct al_error *reterr)
{
    struct file_store *s = (struct file_store *)base;
    if (!valid_id(id)) {
        return bad_id(reterr);
    }
    char tmp[4200];
    char final[4200];
    path_of(s, id, "tmp", tmp, sizeof tmp);
    path_of(s, id, "cont", final, sizeof final);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "store: cannot create %s", tmp);
    }
    char head[32];
    int hn = snprintf(head, sizeof head, "%lld\n", (long long)expires_ms);
    int ok = write(fd, head, (size_t)hn) == hn;
    const char *p = data;
    size_t left = len;
    while (ok && left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        ok = w > 0;
        if (ok) {
            p += w;
            left -= (size_t)w;
        }
    }
    int err = errno;
    ok = ok && fsync(fd) == 0;
    err = ok ? 0 : (err ? err : errno);
    close(fd);
    if (!ok || rename(tmp, final) != 0) {
        err = err ? err : errno;
        unlink(tmp);
        return error_set_errno(reterr, AL_INTERNAL_ERROR, err, "store: cannot write %s", final);
    }
    /* The rename itself must survive a crash too. */
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return AL_OK;
}

/* AL_PROTOCOL_ERROR: something other than a regular file was planted under the name. */
static enum al_code read_all(const char *path, char **ret, size_t *ret_len, struct al_error *reterr)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ELOOP) {
            return error_set(reterr, AL_PROTOCOL_ERROR,
                             "store: %s is a symbolic link, not a continuation file", path);
        }
        return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "store: cannot open %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return error_set_errno(reterr, AL_INTERNAL_ERROR, err, "store: cannot stat %s", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return error_set(reterr, AL_PROTOCOL_ERROR,
                         "store: %s is not a regular file, not a continuation file", path);
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > STORE_FILE_MAX) {
        close(fd);
        return error_set(reterr, AL_INTERNAL_ERROR, "store: %s is not a continuation file", path);
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        return error_set(reterr, AL_INTERNAL_ERROR, "store: cannot read %s", path);
    }
    buf[size] = '\0';
    *ret = buf;
    *ret_len = size;
    return AL_OK;
}

static enum al_code file_claim(struct al_store *base, const char *id, void **ret_data,
                               size_t *ret_len, struct al_error *reterr)
{
    struct file_store *s = (struct file_store *)base;
    if (!valid_id(id)) {
        return bad_id(reterr);
    }
    char stored[4200];
    char claimed[4200];
    path_of(s, id, "cont", stored, sizeof stored);
    path_of(s, id, "claimed", claimed, sizeof claimed);
    if (rename(stored, claimed) != 0) {
        if (errno == ENOENT) {
            return error_set(reterr, AL_PROTOCOL_ERROR,
                             "the stored continuation %s does not exist, or was already resumed",
                             id);
        }
        return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "store: cannot claim %s", id);
    }
    char *all = NULL;
    size_t len = 0;
    enum al_code rc = read_all(claimed, &all, &len, reterr);
    if (rc == AL_PROTOCOL_ERROR) {
        return rc; /* stays claimed: what was planted is never resumed */
    }
    if (rc != AL_OK) {
        /* Out of descriptors or memory: nothing was used, give it back. */
        if (rename(claimed, stored) != 0) {
            return error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "store: cannot release %s",
                                   id);
        }
        return rc;
    }
    char *nl = memchr(all, '\n', len);
    char *end = NULL;
    long long expires = nl ? strtoll(all, &end, 10) : 0;
    if (!nl || end != nl) {
        free(all);
        /* stays claimed: a file of another format is never resumed */
        return error_set(reterr, AL_INTERNAL_ERROR, "store: %s is not a continuation file",
                         claimed);
    }
    if (expires <= clock_wall_ms()) {
        unlink(claimed);
        free(all);
        return error_set(reterr, AL_PROTOCOL_ERROR, "the stored continuation %s has expired", id);
    }
    size_t head = (size_t)(nl + 1 - all);
    memmove(all, nl + 1, len - head + 1);
    *ret_data = all;
    *ret_len = len - head;
    return AL_OK;
}

static enum al_code file_consume(struct al_store *base, const char *id, struct al_error *reterr)
{
    struct file_store *s = (struct file_store *)base;
    if (!valid_id(id)) {
        return bad_id(reterr);
    }
    char claimed[4200];
    path_of(s, id, "claimed", claimed, sizeof claimed);
    if (unlink(claimed) != 0) {
        return error_set_errno(reterr, errno == ENOENT ? AL_PROTOCOL_ERROR : AL_INTERNAL_ERROR,
                               errno, "store: cannot consume %s", id);
    }
    return AL_OK;
}

static enum al_code file_release(struct al_store *base, const char *id, struct al_error *reterr)
{
    struct file_store *s = (struct file_store *)base;
    if (!valid_id(id)) {
        return bad_id(reterr);
    }
    char stored[4200];
    char claimed[4200];
    path_of(s, id, "cont", stored, sizeof stored);
    path_of(s, id, "claimed", claimed, sizeof claimed);
    if (rename(claimed, stored) != 0) {
        return error_set_errno(reterr, errno == ENOENT ? AL_PROTOCOL_ERROR : AL_INTERNAL_ERROR,
                               errno, "store: cannot release %s", id);
    }
    return AL_OK;
}

static void file_destroy(struct al_store *base)
{
    struct file_store *s = (struct file_store *)base;
    free(s->dir);
    free(s);
}

enum al_code al_store_file_new(const char *dir, struct al_store **ret_store,
                               struct al_error *reterr)
{
    if (!dir || !*dir || !ret_store) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_store_file_new: no directory");
    }
    if (strlen(dir) > 4000) {
        return error_set(reterr, AL_CONFIG_ERROR, "store directory path too long");
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return error_set_errno(reterr, AL_CONFIG_ERROR, errno, "store: cannot create %s", dir);
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        return error_set(reterr, AL_CONFIG_ERROR, "store: %s is not a writable directory", dir);
    }
    /* Anyone else who can write it can plant, copy or remove continuations. */
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "store: %s is writable by group or others (mode %03o); it must be "
                         "writable by its owner only (chmod go-w)",
                         dir, (unsigned)(st.st_mode & 0777));
    }
    struct file_store *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(dir))) {
        free(s);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    s->base.put = file_put;
    s->base.claim = file_claim;
    s->base.consume = file_consume;
    s->base.release = file_release;
    s->base.destroy = file_destroy;
    *ret_store = &s->base;
    return AL_OK;
}

void al_store_free(struct al_store *store)
{
    if (store && store->destroy) {
        store->destroy(store);
    }
}
