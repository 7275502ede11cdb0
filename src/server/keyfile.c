/*
 * keyfile.c - key files of the data directory (keyfile.h). A new file is written to a temporary
 * name and linked into place, so two airlockd starting at once cannot both create a key: the
 * one that loses the link reads the winner's. A rotated file holds the key in use on its first
 * line and the keys it replaced on the next ones (continuations signed under them still verify);
 * it is replaced whole by a rename, never written in place.
 */
#include "keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"

/* The directory of path synced, so a name just linked or renamed there survives a crash. */
static int keyfile_sync_dir(const char *path, struct al_error *reterr)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path); /* keyfile_load's path: it fits */
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    }
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot sync the directory of %.150s",
                        path);
        if (dfd >= 0) {
            close(dfd);
        }
        return -1;
    }
    close(dfd);
    return 0;
}

int keyfile_random(unsigned char *ret, size_t len)
{
    return len <= KEYFILE_MAX && RAND_bytes(ret, (int)len) == 1 ? 0 : -1;
}

static int keyfile_create(const char *path, size_t len, struct al_error *reterr)
{
    unsigned char raw[KEYFILE_MAX];
    char hex[2 * KEYFILE_MAX + 2];
    char tmp[4200];
    int rc = -1;
    if (RAND_bytes(raw, (int)len) != 1) {
        error_set(reterr, AL_INTERNAL_ERROR, "the random generator failed");
        return -1;
    }
    hex_encode(raw, len, hex);
    hex[2 * len] = '\n';
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp) {
        error_set(reterr, AL_CONFIG_ERROR, "the data directory's path is too long");
        goto out;
    }
    unlink(tmp); /* a crash during an earlier creation may have left it */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot create %.150s", tmp);
        goto out;
    }
    int ok = write(fd, hex, 2 * len + 1) == (ssize_t)(2 * len + 1) && fsync(fd) == 0;
    close(fd);
    if (!ok) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot write %.150s", tmp);
        unlink(tmp);
        goto out;
    }
    if (link(tmp, path) != 0 && errno != EEXIST) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot create %.150s", path);
        unlink(tmp);
        goto out;
    }
    unlink(tmp);
    /* the new name durable before anything is signed or sealed with the key */
    if (keyfile_sync_dir(path, reterr) != 0) {
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(raw, sizeof raw);
    OPENSSL_cleanse(hex, sizeof hex);
    return rc;
}

/* keyfile_load, or with create 0 a file that is not there is 1 (and never made). */
static int keyfile_read(const char *data_dir, const char *file, const char *env, size_t len,
                        unsigned char *ret, int create, struct al_error *reterr)
{
    char path[4200];
    char hex[2 * KEYFILE_MAX + 8] = "";
    const char *given = env ? getenv(env) : NULL;
    const char *what = env;
    int rc = -1;
    if (len == 0 || len > KEYFILE_MAX) {
        error_set(reterr, AL_CONFIG_ERROR, "bad key length");
        return -1;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", data_dir, file) >= sizeof path) {
        error_set(reterr, AL_CONFIG_ERROR, "the data directory's path is too long");
        return -1;
    }
    if (given && given[0]) {
        snprintf(hex, sizeof hex, "%s", given);
    } else {
        /* never through a symbolic link: the key is airlockd's own file */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT && !create) {
            return 1;
        }
        if (fd < 0 && errno == ENOENT) {
            if (keyfile_create(path, len, reterr) != 0) {
                return -1;
            }
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        }
        if (fd < 0) {
            error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot read %.150s", path);
            return -1;
        }
        ssize_t got = read(fd, hex, sizeof hex - 1);
        close(fd);
        hex[got > 0 ? got : 0] = '\0';
        what = path;
    }
    size_t hlen = strcspn(hex, "\r\n");
    if (hlen != 2 * len || hex_decode(hex, len, ret) != 0) {
        error_set(reterr, AL_CONFIG_ERROR, "%.150s must hold %zu hex digits", what, 2 * len);
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(hex, sizeof hex);
    return rc;
}

int keyfile_load(const char *data_dir, const char *file, const char *env, size_t len,
                 unsigned char *ret, struct al_error *reterr)
{
    return keyfile_read(data_dir, file, env, len, ret, 1, reterr);
}

int keyfile_load_previous(const char *data_dir, const char *file, const char *env, size_t len,
                          unsigned char *ret, size_t max, size_t *ret_n, struct al_error *reterr)
{
    char path[4200];
    char text[KEYFILE_KEEP_MAX * (2 * KEYFILE_MAX + 2) + 8];
    size_t n = 0;
    int rc = -1;
    *ret_n = 0;
    if (len == 0 || len > KEYFILE_MAX) {
        error_set(reterr, AL_CONFIG_ERROR, "bad key length");
        return -1;
    }
    if ((env && getenv(env) && getenv(env)[0]) ||
        (size_t)snprintf(path, sizeof path, "%s/%s", data_dir, file) >= sizeof path) {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return 0; /* keyfile_load made or read it: nothing older */
    }
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    text[got > 0 ? got : 0] = '\0';
    const char *line = strchr(text, '\n');
    while (line && line[1] && n < max) {
        line++;
        size_t hlen = strcspn(line, "\r\n");
        char hex[2 * KEYFILE_MAX + 1];
        if (hlen != 2 * len) {
            error_set(reterr, AL_CONFIG_ERROR, "%.150s: line %zu must hold %zu hex digits", path,
                      n + 2, 2 * len);
            goto out;
        }
        memcpy(hex, line, hlen);
        hex[hlen] = '\0';
        int bad = hex_decode(hex, len, ret + n * len) != 0;
        OPENSSL_cleanse(hex, sizeof hex);
        if (bad) {
            error_set(reterr, AL_CONFIG_ERROR, "%.150s: line %zu must hold %zu hex digits", path,
                      n + 2, 2 * len);
            goto out;
        }
        n++;
        line = strchr(line, '\n');
    }
    *ret_n = n;
    rc = 0;
out:
    OPENSSL_cleanse(text, sizeof text);
    return rc;
}

int keyfile_load_ring(const char *data_dir, const char *file, const char *env, size_t len,
                      struct keyfile_ring *ret, struct al_error *reterr)
{
    char next[256];
    memset(ret, 0, sizeof *ret);
    ret->len = len;
    if (keyfile_load(data_dir, file, env, len, ret->keys, reterr) != 0 ||
        keyfile_load_previous(data_dir, file, env, len, ret->keys + len, KEYFILE_KEEP_MAX - 1,
                              &ret->n, reterr) != 0) {
        return -1;
    }
    ret->n++;
    snprintf(next, sizeof next, "%s.next", file);
    if (env && getenv(env) && getenv(env)[0]) {
        return 0;
    }
    int rc = keyfile_read(data_dir, next, NULL, len, ret->next, 0, reterr);
    if (rc < 0) {
        return -1;
    }
    /* a staged key already in the file is a rotation finished (or its file left behind) */
    ret->has_next = rc == 0;
    for (size_t i = 0; ret->has_next && i < ret->n; i++) {
        ret->has_next = CRYPTO_memcmp(ret->next, ret->keys + i * len, len) != 0;
    }
    if (!ret->has_next) {
        OPENSSL_cleanse(ret->next, sizeof ret->next);
    }
    return 0;
}

int keyfile_write(const char *data_dir, const char *file, const unsigned char *keys, size_t len,
                  size_t n, struct al_error *reterr)
{
    char path[4200];
    char tmp[4300];
    char text[KEYFILE_KEEP_MAX * (2 * KEYFILE_MAX + 1)];
    int rc = -1;
    if (len == 0 || len > KEYFILE_MAX || n == 0 || n > KEYFILE_KEEP_MAX ||
        (size_t)snprintf(path, sizeof path, "%s/%s", data_dir, file) >= sizeof path) {
        error_set(reterr, AL_CONFIG_ERROR, "bad key file %.150s", file);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        hex_encode(keys + i * len, len, text + used);
        used += 2 * len;
        text[used++] = '\n';
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot create %.150s", tmp);
        goto out;
    }
    int ok = write(fd, text, used) == (ssize_t)used && fsync(fd) == 0;
    ok &= close(fd) == 0;
    if (!ok || rename(tmp, path) != 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot write %.150s", path);
        unlink(tmp);
        goto out;
    }
    rc = keyfile_sync_dir(path, reterr);
out:
    OPENSSL_cleanse(text, sizeof text);
    return rc;
}

int keyfile_lock(const char *data_dir, int *ret_fd, struct al_error *reterr)
{
    int fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        error_set_errno(reterr, AL_CONFIG_ERROR, errno, "cannot open %.150s", data_dir);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) {
            return 1;
        }
        error_set_errno(reterr, AL_INTERNAL_ERROR, e, "cannot lock %.150s", data_dir);
        return -1;
    }
    *ret_fd = fd;
    return 0;
}
